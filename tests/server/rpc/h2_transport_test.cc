// The nghttp2 transport of the gRPC port against gRPC's own C++ client:
// unary and bidi calls, Trailers-Only, deadlines, unknown encodings, a
// message split over many frames, the message limit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/server/rpc/h2_fixture.h"

namespace metasrv::server {
namespace {

TEST_F(H2TransportTest, UnaryEchoThroughGrpcsClient) {
  Serve({});
  grpc::ClientContext context;
  std::string reply;
  ASSERT_TRUE(Unary("/t.T/Echo", "hello", &reply, &context).ok());
  EXPECT_EQ(reply, "hello");
  EXPECT_TRUE(absl::StartsWith(sink_.last_peer, "ipv4:127.0.0.1:"))
      << sink_.last_peer;
}

TEST_F(H2TransportTest, AMessageSplitAcrossManyDataFramesArrivesWhole) {
  Serve({});
  std::string big(3 << 20, 'z');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = 'a' + i % 26;
  grpc::ClientContext context;
  std::string reply;
  ASSERT_TRUE(Unary("/t.T/Echo", big, &reply, &context).ok());
  EXPECT_EQ(reply, big);
}

TEST_F(H2TransportTest, AMessageOverTheLimitIsResourceExhausted) {
  H2TransportOptions options;
  options.limits.max_message_bytes = 1000;
  Serve(options);
  grpc::ClientContext context;
  std::string reply;
  grpc::Status status =
      Unary("/t.T/Echo", std::string(1001, 'x'), &reply, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(H2TransportTest, TrailersOnlyCarriesCodeMessageAndTrailers) {
  Serve({});
  grpc::ClientContext context;
  std::string reply;
  grpc::Status status = Unary("/t.T/Fail", "x", &reply, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "n\xc3\xb6 100%");
  auto extra = context.GetServerTrailingMetadata().find("x-extra");
  ASSERT_NE(extra, context.GetServerTrailingMetadata().end());
  EXPECT_EQ(std::string(extra->second.data(), extra->second.size()), "yes");
}

// An encoding the server does not inflate is UNIMPLEMENTED, naming those it
// does (the answer's grpc-accept-encoding lists them too, for the client's
// fallback: gRPC's client keeps that field to itself; H2FramesTest reads
// it).
TEST_F(H2TransportTest, AnUnknownEncodingIsUnimplemented) {
  Serve({});
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_DEFLATE);
  std::string reply;
  grpc::Status status = Unary("/t.T/Echo", "x", &reply, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(status.error_message().find("deflate"), std::string::npos);
  EXPECT_NE(status.error_message().find("identity,gzip,zstd"),
            std::string::npos);
}

// gzip, as gRPC's own client sends it: the flag and grpc-encoding make the
// message gzip for the call's owner (which inflates it); a message gRPC
// leaves uncompressed (too small) is plain.
TEST_F(H2TransportTest, GzipIsNamedByTheFlagAndTheEncoding) {
  Serve({});
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  std::string reply;
  ASSERT_TRUE(Unary("/t.T/Echo", std::string(4096, 'g'), &reply, &context)
                  .ok());
  EXPECT_EQ(sink_.last_compression.load(), Compression::kGzip);
  EXPECT_LT(reply.size(), 4096u);  // The gzip body, echoed as it came.
  grpc::ClientContext plain;
  ASSERT_TRUE(Unary("/t.T/Echo", "p", &reply, &plain).ok());
  EXPECT_EQ(sink_.last_compression.load(), Compression::kNone);
  EXPECT_EQ(reply, "p");
}

TEST_F(H2TransportTest, TheClientsDeadlineEndsTheCallOnBothSides) {
  Serve({});
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  std::string reply;
  grpc::Status status = Unary("/t.T/Silent", "x", &reply, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's side is gone too (its timer or the client's reset).
  EXPECT_TRUE(WaitFor([&] { return sink_.closed.load() == 1; }));
}

TEST_F(H2TransportTest, ABidiStreamIsAnsweredInOrder) {
  Serve({});
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  auto stream = stub.PrepareCall(&context, "/t.T/Echo", &cq);
  void* tag = nullptr;
  bool ok = false;
  stream->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  for (int i = 0; i < 200; ++i) {
    const std::string text = absl::StrCat("message ", i);
    grpc::Slice slice(text);
    grpc::ByteBuffer out(&slice, 1);
    stream->Write(out, reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    grpc::ByteBuffer in;
    stream->Read(&in, reinterpret_cast<void*>(3));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(in.Dump(&slices).ok());
    std::string got;
    for (const auto& s : slices) got.append(s.begin(), s.end());
    EXPECT_EQ(got, text);
  }
  stream->WritesDone(reinterpret_cast<void*>(4));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::Status status;
  stream->Finish(&status, reinterpret_cast<void*>(5));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(sink_.messages.load(), 200);
}

}  // namespace
}  // namespace metasrv::server
