#include "telemetry/exit_restore.h"

#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>

namespace novaserve {
namespace {

struct Registry {
  std::mutex mu;
  std::map<uint64_t, std::function<void()>> restores;
  uint64_t next = 1;
  std::terminate_handler previous = nullptr;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked: must outlive static destructors and atexit
  return *r;
}

void on_terminate() {
  run_exit_restores();
  if (registry().previous != nullptr) registry().previous();
  std::abort();
}

}  // namespace

uint64_t register_exit_restore(std::function<void()> restore) {
  static std::once_flag hooks;
  std::call_once(hooks, [] {
    std::atexit(run_exit_restores);
    registry().previous = std::set_terminate(on_terminate);
  });
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.restores.emplace(r.next, std::move(restore));
  return r.next++;
}

void unregister_exit_restore(uint64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.restores.erase(id);
}

void run_exit_restores() {
  std::map<uint64_t, std::function<void()>> todo;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    todo.swap(r.restores);
  }
  for (auto& [id, restore] : todo) restore();
}

}  // namespace novaserve
