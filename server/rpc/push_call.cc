#include "server/rpc/push_call.h"

#include <utility>

#include "server/rpc/h2_push_call.h"

namespace metasrv::server {

SharedMessage::SharedMessage(SharedPieces pieces)
    : pieces_(std::move(pieces)), length_(LengthOf(pieces_)) {}

SharedMessage::SharedMessage(const google::protobuf::MessageLite& message) {
  auto text = std::make_shared<std::string>();
  message.SerializeToString(text.get());
  length_ = text->size();
  pieces_.push_back(SharedBytes::Of(std::move(text)));
}

MethodHandlers PushCall::Factory(MakeHandler make) {
  auto shared = std::make_shared<const MakeHandler>(std::move(make));
  return [shared](H2Start start) {
    H2PushCall::Start(std::move(start), (*shared)());
  };
}

}  // namespace metasrv::server
