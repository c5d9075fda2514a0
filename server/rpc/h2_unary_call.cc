#include "server/rpc/h2_unary_call.h"

namespace metasrv::server {

std::vector<SharedBytes> PiecesOf(const grpc::ByteBuffer& bytes) {
  std::vector<SharedBytes> pieces;
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return pieces;
  pieces.reserve(slices.size());
  for (grpc::Slice& slice : slices) {
    auto held = std::make_shared<const grpc::Slice>(std::move(slice));
    const absl::string_view view(reinterpret_cast<const char*>(held->begin()),
                                 held->size());
    pieces.push_back({std::move(held), view});
  }
  return pieces;
}

}  // namespace metasrv::server
