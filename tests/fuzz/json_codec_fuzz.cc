// libFuzzer target: the flow-state JSON codec. Any input either fails to
// decode with a status, or decodes to a value that encodes to canonical bytes
// which decode back to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/flow_state_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using metasrv::core::DecodeFlowState;
  using metasrv::core::EncodeFlowState;
  // An exact-size copy, so the sanitizer catches any read past the end.
  std::string input(reinterpret_cast<const char*>(data), size);
  auto value = DecodeFlowState(input);
  if (!value.ok()) {
    if (value.status().message().empty()) std::abort();
    return 0;
  }
  const std::string canonical = EncodeFlowState(*value);
  auto again = DecodeFlowState(canonical);
  if (!again.ok() || *again != *value) std::abort();
  if (EncodeFlowState(*again) != canonical) std::abort();
  return 0;
}
