// Text that came from the network (a node's address, its host name, a
// server's error), made inert wherever it is shown: a log line or a
// terminal. Every byte that could end a line, move a cursor, retitle a
// window or garble what follows is escaped: C0 controls, DEL, the C1
// controls (U+0080..U+009F) and every byte of broken UTF-8. Well-formed
// UTF-8 beyond them stays as it is. Thread-safe (pure functions).
#ifndef METASRV_CORE_INERT_TEXT_H_
#define METASRV_CORE_INERT_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace metasrv::core {

// The length of the well-formed UTF-8 sequence at `text[i]`, or 0 (an
// overlong form, a surrogate, past U+10FFFF, cut short).
size_t Utf8SequenceAt(absl::string_view text, size_t i);
bool IsValidUtf8(absl::string_view text);

// Appends `text` to `out` made inert: as JSON string content with `json`
// (quotes, backslashes and controls as JSON escapes them, the rest as
// \u00NN), else with \xNN for a byte and \u00NN for a C1 control.
void AppendInert(absl::string_view text, bool json, std::string* out);
// `text` made inert for a terminal (AppendInert without `json`).
std::string Inert(absl::string_view text);

}  // namespace metasrv::core

#endif  // METASRV_CORE_INERT_TEXT_H_
