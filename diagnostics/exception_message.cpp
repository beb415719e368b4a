#include "diagnostics/exception_message.h"

#include "diagnostics/classify.h"
#include "torchprobe/error.h"

namespace torchprobe::diagnostics {

std::string raw_message(const std::exception& e) { return without_backend_list(short_message(e)); }

}  // namespace torchprobe::diagnostics
