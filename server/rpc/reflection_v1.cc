#include "server/rpc/reflection_v1.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace metasrv::server {
namespace {

namespace refl = grpc::reflection::v1;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// Adds `file` and everything it imports, each once, dependencies last.
void AddFile(const FileDescriptor* file,
             absl::flat_hash_set<const FileDescriptor*>* seen,
             refl::FileDescriptorResponse* out) {
  if (!seen->insert(file).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(out->add_file_descriptor_proto());
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFile(file->dependency(i), seen, out);
  }
}

void SetError(grpc::StatusCode code, const std::string& message,
              refl::ServerReflectionResponse* out) {
  out->mutable_error_response()->set_error_code(code);
  out->mutable_error_response()->set_error_message(message);
}

// One reflection stream: answers each request in order, one write at a time.
class ReflectionStream final
    : public grpc::ServerBidiReactor<refl::ServerReflectionRequest,
                                     refl::ServerReflectionResponse> {
 public:
  explicit ReflectionStream(const ReflectionV1Service* service)
      : service_(service) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_ = service_->Answer(request_);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const ReflectionV1Service* const service_;  // Answers; borrowed.
  refl::ServerReflectionRequest request_;     // The request being read.
  refl::ServerReflectionResponse response_;   // The answer being written.
};

// The file a file request asks for; null, with `*missing` saying what was not
// found, when there is none.
const FileDescriptor* RequestedFile(
    const refl::ServerReflectionRequest& request, std::string* missing) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  switch (request.message_request_case()) {
    case refl::ServerReflectionRequest::kFileByFilename:
      *missing = absl::StrCat("file not found: ", request.file_by_filename());
      return pool->FindFileByName(request.file_by_filename());
    case refl::ServerReflectionRequest::kFileContainingSymbol:
      *missing =
          absl::StrCat("symbol not found: ", request.file_containing_symbol());
      return pool->FindFileContainingSymbol(request.file_containing_symbol());
    case refl::ServerReflectionRequest::kFileContainingExtension: {
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
void ExtensionNumbers(const std::string& type_name,
                      refl::ServerReflectionResponse* out) {
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

grpc::ServerBidiReactor<refl::ServerReflectionRequest,
                        refl::ServerReflectionResponse>*
ReflectionV1Service::ServerReflectionInfo(grpc::CallbackServerContext*) {
  return new ReflectionStream(this);
}

refl::ServerReflectionResponse ReflectionV1Service::Answer(
    const refl::ServerReflectionRequest& request) const {
  refl::ServerReflectionResponse out;
  out.set_valid_host(request.host());
  *out.mutable_original_request() = request;
  switch (request.message_request_case()) {
    case refl::ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        out.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case refl::ServerReflectionRequest::kFileByFilename:
    case refl::ServerReflectionRequest::kFileContainingSymbol:
    case refl::ServerReflectionRequest::kFileContainingExtension: {
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
    case refl::ServerReflectionRequest::kAllExtensionNumbersOfType:
      ExtensionNumbers(request.all_extension_numbers_of_type(), &out);
      break;
    default:
      SetError(grpc::StatusCode::INVALID_ARGUMENT, "empty reflection request",
               &out);
  }
  return out;
}

}  // namespace metasrv::server
