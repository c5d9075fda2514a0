// Certificates for TLS tests, made with openssl in a fresh folder.
#ifndef METASRV_TESTS_SERVER_CERTS_H_
#define METASRV_TESTS_SERVER_CERTS_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace metasrv::testing {

// Two CAs (ca1, ca2); 'server' (127.0.0.1, localhost) and 'client1' signed
// by ca1, 'client2' by ca2: NAME.pem and NAME.key in Path().
class Certs {
 public:
  Certs() {
    char dir[] = "/tmp/metasrv-certs-XXXXXX";
    dir_ = mkdtemp(dir);
    // Two CAs; a server cert for 127.0.0.1 and a client cert from each CA.
    Run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ca1 "
        "-keyout ca1.key -out ca1.pem");
    Run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ca2 "
        "-keyout ca2.key -out ca2.pem");
    Issue("server", "ca1", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    Issue("client1", "ca1", "extendedKeyUsage=clientAuth");
    Issue("client2", "ca2", "extendedKeyUsage=clientAuth");
  }
  ~Certs() { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Another server certificate for 127.0.0.1 from ca1, with its own key:
  // NAME.pem and NAME.key (a renewal).
  void IssueServer(const std::string& name) {
    Issue(name, "ca1", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  }
  // A server certificate for 127.0.0.1 issued by an intermediate CA that
  // ca1 signed: NAME.key, and NAME-chain.pem holding the leaf, then the
  // intermediate (a chain file as CAs hand them out).
  void IssueServerThroughIntermediate(const std::string& name) {
    Run("openssl req -newkey rsa:2048 -nodes -subj /CN=inter -keyout "
        "inter.key -out inter.csr");
    Run("printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign\n' "
        "> inter.ext && openssl x509 -req -in inter.csr -CA ca1.pem -CAkey "
        "ca1.key -CAcreateserial -days 2 -extfile inter.ext -out inter.pem");
    Issue(name, "inter", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    std::ofstream(Path(name + "-chain.pem"))
        << Read(name + ".pem") << Read("inter.pem");
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(Path(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void Run(const std::string& cmd) {
    ASSERT_EQ(
        std::system(("cd " + dir_ + " && " + cmd + " >/dev/null 2>&1").c_str()),
        0)
        << cmd;
  }
  void Issue(const std::string& name, const std::string& ca,
             const std::string& ext) {
    Run("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " +
        name + ".key -out " + name + ".csr");
    Run("printf '" + ext + "\\n' > " + name + ".ext && openssl x509 -req -in " +
        name + ".csr -CA " + ca + ".pem -CAkey " + ca +
        ".key -CAcreateserial -days 2 -extfile " + name + ".ext -out " + name +
        ".pem");
  }
  std::string dir_;  // Holds everything.
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_CERTS_H_
