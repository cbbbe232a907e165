// `novaserve inspect FILE`: header, metadata and tensor table of a GGUF file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf_file.h"

namespace novaserve {
namespace {

// Long arrays (vocabularies: 100k+ items) are cut to their first few items plus the count.
constexpr size_t kMaxArrayItems = 8;
constexpr size_t kMaxStringBytes = 200;

std::string dims_to_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string value_type_label(const GgufValue& v) {
  std::string s = gguf_value_type_name(v.type);
  if (v.type == GgufValueType::kArray) {
    s += "<" + std::string(gguf_value_type_name(v.as_array().elem_type)) + ">";
  }
  return s;
}

void print_file(const std::string& path, const GgufFile& f) {
  std::printf("file: %s\n", path.c_str());
  std::printf("version: %u\n", f.version());
  std::printf("alignment: %llu\n", static_cast<unsigned long long>(f.alignment()));
  std::printf("data offset: %llu\n", static_cast<unsigned long long>(f.data_offset()));
  std::printf("file size: %zu\n", f.file_size());

  std::printf("\nmetadata: %zu keys\n", f.metadata().size());
  for (const auto& kv : f.metadata()) {
    std::printf("  %s (%s) = %s\n", kv.key.c_str(), value_type_label(kv.value).c_str(),
                gguf_value_to_string(kv.value, kMaxArrayItems, kMaxStringBytes).c_str());
  }

  std::printf("\ntensors: %zu\n", f.tensors().size());
  if (f.tensors().empty()) return;
  // Names are escaped like string values so odd bytes cannot garble the table.
  std::vector<std::string> names;
  size_t name_width = 4;
  for (const auto& t : f.tensors()) {
    names.push_back(gguf_value_to_string(GgufValue{GgufValueType::kString, t.name}));
    name_width = std::max(name_width, names.back().size());
  }
  std::printf("  %-*s  %-6s  %-22s  %12s  %12s\n", static_cast<int>(name_width), "name", "type",
              "dims", "offset", "bytes");
  uint64_t total = 0;
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    total += t.nbytes;
    std::printf("  %-*s  %-6s  %-22s  %12llu  %12llu\n", static_cast<int>(name_width),
                names[i].c_str(), std::string(ggml_type_traits(t.type).name).c_str(),
                dims_to_string(t.dims).c_str(), static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.nbytes));
  }
  std::printf("tensor data: %llu bytes\n", static_cast<unsigned long long>(total));
}

int run_inspect(const std::string& path) {
  auto f = GgufFile::open(path);
  if (!f.ok()) {
    std::string msg = f.error().message;
    for (char& c : msg) {
      if (c == '\n' || c == '\r') c = ' ';  // the error contract is one line
    }
    std::fprintf(stderr, "novaserve inspect: error: %s\n", msg.c_str());
    return 2;
  }
  print_file(path, *f.value());
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Print a GGUF file's header, metadata and tensors");
  auto path = std::make_shared<std::string>();
  cmd->add_option("file", *path, "GGUF file")->required();
  cmd->callback([path, &exit_code] { exit_code = run_inspect(*path); });
}

}  // namespace novaserve
