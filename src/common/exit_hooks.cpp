#include "common/exit_hooks.h"

#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>

namespace novaserve {
namespace {

struct Registry {
  std::mutex mu;
  std::map<uint64_t, std::function<void()>> hooks;
  uint64_t next = 1;
  std::terminate_handler previous = nullptr;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked: must outlive static destructors and atexit
  return *r;
}

void on_terminate() {
  run_exit_hooks();
  if (registry().previous != nullptr) registry().previous();
  std::abort();
}

}  // namespace

uint64_t register_exit_hook(std::function<void()> hook) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    std::atexit(run_exit_hooks);
    registry().previous = std::set_terminate(on_terminate);
  });
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.hooks.emplace(r.next, std::move(hook));
  return r.next++;
}

void unregister_exit_hook(uint64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.hooks.erase(id);
}

void run_exit_hooks() {
  std::map<uint64_t, std::function<void()>> todo;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    todo.swap(r.hooks);
  }
  for (auto& [id, hook] : todo) hook();
}

}  // namespace novaserve
