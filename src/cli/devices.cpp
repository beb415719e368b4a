// torchprobe devices [--json] [--threads N]
#include <cstdio>
#include <memory>

#include "commands.h"
#include "measuring.h"
#include "torchprobe/inventory.h"
#include "torchprobe/trust.h"

namespace torchprobe::cli {

std::vector<Command> add_devices_command(CLI::App& app) {
  struct Flags {
    bool json = false;
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("devices", std::string(measuring_description("devices")));
  cmd->add_flag("--json", flags->json, "Print the inventory as JSON");
  cmd->add_option("--threads", flags->threads,
                  std::string("LibTorch intra-op threads to set and report (") + kDefaultThreadsHelp + ")")
      ->check(in_range(1, kMaxThreads));
  return {{cmd, [flags] {
             configure_threads(flags->threads);
             const Inventory inventory = collect_inventory();
             std::printf("%s", flags->json ? (inventory_json(inventory) + "\n").c_str() : inventory_text(inventory).c_str());
             if (flags->json) {
               for (const auto& w : trust::threading_warnings(inventory.threads)) {
                 std::fprintf(stderr, "torchprobe: warning: %s\n", w.message.c_str());
               }
             }
             return 0;
           }}};
}

}  // namespace torchprobe::cli
