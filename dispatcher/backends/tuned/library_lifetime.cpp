#include "dispatcher/backends/tuned/library_lifetime.hpp"

#include <cstdlib>
#include <mutex>
#include <unordered_set>

namespace convjit {

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<ReleasableAtExit*> live;
};

// Leaked on purpose: it must outlive every static destructor.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

// Releases under the lock, so no object can be destroyed meanwhile (its
// destructor unregisters first, which waits for the lock).
void release_all() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (ReleasableAtExit* object : r.live) object->release();
  r.live.clear();
}

}  // namespace

void register_release_at_exit(ReleasableAtExit* object) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.insert(object);
  std::atexit(release_all);  // later registrations run earlier: after the library's own
}

void unregister_release_at_exit(ReleasableAtExit* object) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.erase(object);
}

}  // namespace convjit
