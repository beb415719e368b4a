// torchprobe: the command-line front end. Thin: parse flags, call the core library, print.
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "torchprobe/cli_support.h"
#include "torchprobe/device.h"

int main(int argc, char** argv) {
  CLI::App app{"torchprobe: LibTorch benchmarks and diagnostics for the CPU and every GPU"};
  app.require_subcommand(1);

  bool devices_json = false;
  int threads = 0;
  auto* devices = app.add_subcommand("devices", "Inventory of the CPU, every CUDA device, LibTorch and BLAS");
  devices->add_flag("--json", devices_json, "Print the inventory as JSON");
  devices->add_option("--threads", threads, "LibTorch intra-op threads to report (default: LibTorch's own)")
      ->check(CLI::PositiveNumber);

  return torchprobe::run_cli(app, argc, argv, [&] {
    if (threads > 0) at::set_num_threads(threads);
    const torchprobe::Inventory inventory = torchprobe::collect_inventory();
    if (devices_json) {
      std::printf("%s\n", torchprobe::inventory_json(inventory).c_str());
    } else {
      std::printf("%s", torchprobe::inventory_text(inventory).c_str());
    }
    const std::string warning = torchprobe::blas_warning(inventory.blas);
    if (devices_json && !warning.empty()) std::fprintf(stderr, "torchprobe: warning: %s\n", warning.c_str());
    return 0;
  });
}
