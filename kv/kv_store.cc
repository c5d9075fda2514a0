#include "kv/kv_store.h"

namespace metasrv::kv {

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

bool InRange(const RangeRequest& req, const std::string& key) {
  if (req.range_end.empty()) return key == req.key;
  if (key < req.key) return false;
  return req.range_end == std::string(1, '\0') || key < req.range_end;
}

Bytes KvStore::Find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

absl::StatusOr<StoredRange> KvStore::Range(const RangeRequest& req) const {
  if (req.key.empty()) {
    return absl::InvalidArgumentError("range: key must not be empty");
  }
  if (req.limit < 0) {
    return absl::InvalidArgumentError("range: limit must not be negative");
  }
  StoredRange out;
  auto add = [&](const Entry& kv) {
    out.entries.push_back({kv.first, req.keys_only ? nullptr : kv.second});
  };
  if (req.range_end.empty()) {
    auto it = map_.find(req.key);
    if (it != map_.end()) add(*it);
    return out;
  }
  const std::string kZero(1, '\0');
  const bool to_end = req.range_end == kZero;
  auto it = (to_end && req.key == kZero) ? order_.begin()
                                         : order_.lower_bound(req.key);
  const uint64_t limit = static_cast<uint64_t>(req.limit);
  for (; it != order_.end(); ++it) {
    const Entry& kv = **it;
    if (!to_end && kv.first >= req.range_end) break;
    if (limit != 0 && out.entries.size() == limit) {
      out.more = true;
      break;
    }
    add(kv);
  }
  return out;
}

Bytes& KvStore::Slot(const std::string& key) {
  auto [it, inserted] = map_.try_emplace(key, nullptr);
  if (inserted) order_.insert(&*it);
  return it->second;
}

bool KvStore::Apply(const std::string& key, Bytes value) {
  if (value == nullptr) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    order_.erase(&*it);
    map_.erase(it);
    return true;
  }
  auto [it, inserted] = map_.try_emplace(key, value);
  if (inserted) {
    order_.insert(&*it);
  } else {
    it->second = std::move(value);
  }
  return !inserted;
}

}  // namespace metasrv::kv
