#include "server/rpc/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/stream_call.h"

namespace metasrv::server {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// Adds `file` and everything it imports, each once, dependencies last.
template <typename FileResponse>
void AddFile(const FileDescriptor* file,
             absl::flat_hash_set<const FileDescriptor*>* seen,
             FileResponse* out) {
  if (!seen->insert(file).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(out->add_file_descriptor_proto());
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFile(file->dependency(i), seen, out);
  }
}

template <typename Response>
void SetError(grpc::StatusCode code, const std::string& message,
              Response* out) {
  out->mutable_error_response()->set_error_code(code);
  out->mutable_error_response()->set_error_message(message);
}

// The longest name `request` carries.
template <typename Request>
size_t LongestName(const Request& request) {
  return std::max({request.host().size(), request.file_by_filename().size(),
                   request.file_containing_symbol().size(),
                   request.file_containing_extension().containing_type().size(),
                   request.all_extension_numbers_of_type().size(),
                   request.list_services().size()});
}

// One reflection stream's logic, over the StreamCall shape: each request
// decoded and answered in order (the shape charges each answer through the
// door).
template <typename Request, typename Response, typename Owner>
class ReflectionStream final : public StreamCall<Request, Response>::Handler {
 public:
  explicit ReflectionStream(const Owner* service) : service_(service) {}

  StreamStep OnRequest(Request* request, const Admission&,
                       Response* answer) override {
    *answer = service_->Answer(*request);
    return StreamStep::Answer();
  }

 private:
  const Owner* const service_;  // Answers; borrowed.
};

// The file a file request asks for; null, with `*missing` saying what was not
// found, when there is none.
template <typename Request>
const FileDescriptor* RequestedFile(const Request& request,
                                    std::string* missing) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  switch (request.message_request_case()) {
    case Request::kFileByFilename:
      *missing = absl::StrCat("file not found: ", request.file_by_filename());
      return pool->FindFileByName(request.file_by_filename());
    case Request::kFileContainingSymbol:
      *missing =
          absl::StrCat("symbol not found: ", request.file_containing_symbol());
      return pool->FindFileContainingSymbol(request.file_containing_symbol());
    case Request::kFileContainingExtension: {
      *missing = "extension not found";
      const auto& ext = request.file_containing_extension();
      const auto* type = pool->FindMessageTypeByName(ext.containing_type());
      const auto* field = type == nullptr ? nullptr
                                          : pool->FindExtensionByNumber(
                                                type, ext.extension_number());
      return field == nullptr ? nullptr : field->file();
    }
    default:
      *missing = "not a file request";
      return nullptr;
  }
}

// Answers an all_extension_numbers_of_type request for `type_name`.
template <typename Response>
void ExtensionNumbers(const std::string& type_name, Response* out) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  const auto* type = pool->FindMessageTypeByName(type_name);
  if (type == nullptr) {
    SetError(grpc::StatusCode::NOT_FOUND,
             absl::StrCat("type not found: ", type_name), out);
    return;
  }
  std::vector<const google::protobuf::FieldDescriptor*> extensions;
  pool->FindAllExtensions(type, &extensions);
  auto* numbers = out->mutable_all_extension_numbers_response();
  numbers->set_base_type_name(type->full_name());
  for (const auto* f : extensions) numbers->add_extension_number(f->number());
}

}  // namespace

template <typename Service, typename Request, typename Response>
void ReflectionService<Service, Request, Response>::Register(
    CallDispatcher* dispatcher) {
  // The row whose path names this version's service.
  const Method method =
      FindMethod(absl::StrCat("/", Service::service_full_name(),
                              "/ServerReflectionInfo"))
          ->method;
  using Call = StreamCall<Request, Response>;
  dispatcher->Add(
      method, Call::Factory([this]() {
        return std::unique_ptr<typename Call::Handler>(
            new ReflectionStream<Request, Response, ReflectionService>(this));
      }));
}

template <typename Service, typename Request, typename Response>
Response ReflectionService<Service, Request, Response>::Answer(
    const Request& request) const {
  Response out;
  // A long name is no descriptor's: refused, and neither it nor the request
  // is sent back (a few kB of gzip could ask for megabytes of echo).
  if (LongestName(request) > kMaxReflectionName) {
    SetError(grpc::StatusCode::INVALID_ARGUMENT,
             absl::StrCat("a name in the request is longer than ",
                          kMaxReflectionName, " bytes"),
             &out);
    return out;
  }
  out.set_valid_host(request.host());
  if (request.ByteSizeLong() <= kMaxEchoedRequest) {
    *out.mutable_original_request() = request;
  }
  switch (request.message_request_case()) {
    case Request::kListServices:
      for (const std::string& name : services_) {
        out.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case Request::kFileByFilename:
    case Request::kFileContainingSymbol:
    case Request::kFileContainingExtension: {
      std::string missing;
      const FileDescriptor* file = RequestedFile(request, &missing);
      if (file == nullptr) {
        SetError(grpc::StatusCode::NOT_FOUND, missing, &out);
      } else {
        absl::flat_hash_set<const FileDescriptor*> seen;
        AddFile(file, &seen, out.mutable_file_descriptor_response());
      }
      break;
    }
    case Request::kAllExtensionNumbersOfType:
      ExtensionNumbers(request.all_extension_numbers_of_type(), &out);
      break;
    default:
      SetError(grpc::StatusCode::INVALID_ARGUMENT, "empty reflection request",
               &out);
  }
  return out;
}

template class ReflectionService<
    grpc::reflection::v1::ServerReflection,
    grpc::reflection::v1::ServerReflectionRequest,
    grpc::reflection::v1::ServerReflectionResponse>;
template class ReflectionService<
    grpc::reflection::v1alpha::ServerReflection,
    grpc::reflection::v1alpha::ServerReflectionRequest,
    grpc::reflection::v1alpha::ServerReflectionResponse>;

}  // namespace metasrv::server
