// The lock of kv/ and core/: absl::Mutex, except under ThreadSanitizer.
//
// Debian's abseil libraries are not built with TSan, so absl::Mutex's
// lock and unlock happen inside uninstrumented code and give TSan no
// happens-before edges: every access it guards would be reported as a race.
// Under TSan this is a std::shared_mutex instead (pthread locks, which TSan
// understands), with the same interface and annotations. Either way:
// Lock/Unlock for writers, ReaderLock/ReaderUnlock for readers, and the
// scoped MutexLock and ReaderMutexLock.
#ifndef METASRV_KV_MUTEX_H_
#define METASRV_KV_MUTEX_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_THREAD__)
#define METASRV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define METASRV_TSAN 1
#endif
#endif

#ifdef METASRV_TSAN
#include <shared_mutex>
#endif

namespace metasrv {

#ifndef METASRV_TSAN

using Mutex = absl::Mutex;
using MutexLock = absl::MutexLock;
using ReaderMutexLock = absl::ReaderMutexLock;

#else

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;  // The lock.
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;  // Held while this lives.
};

class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;  // Held shared while this lives.
};

#endif  // METASRV_TSAN

}  // namespace metasrv

#endif  // METASRV_KV_MUTEX_H_
