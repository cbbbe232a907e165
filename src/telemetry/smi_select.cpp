#include "telemetry/smi_select.h"

namespace novaserve {
namespace {

class SelectedSmi final : public Smi {
 public:
  SelectedSmi(std::unique_ptr<Smi> inner, std::vector<int> index, std::vector<int> label)
      : inner_(std::move(inner)), index_(std::move(index)), label_(std::move(label)) {}
  std::string name() const override { return inner_->name(); }
  int device_count() const override { return static_cast<int>(index_.size()); }
  Result<int> device_by_pci_bus_id(const std::string& pci_bus_id) override {
    auto i = inner_->device_by_pci_bus_id(pci_bus_id);
    if (!i.ok()) return i.error();
    for (size_t k = 0; k < index_.size(); ++k) {
      if (index_[k] == i.value()) return static_cast<int>(k);
    }
    return Err(ErrorCode::kNotFound, "GPU " + pci_bus_id + " is not one this replica serves");
  }
  Result<GpuSample> sample(int gpu) override {
    auto i = inner(gpu);
    if (!i.ok()) return i.error();
    auto s = inner_->sample(i.value());
    if (!s.ok()) return s.error();
    s.value().index = label_[static_cast<size_t>(gpu)];
    return s;
  }
  Result<std::vector<double>> supported_sm_clocks(int gpu) override {
    auto i = inner(gpu);
    if (!i.ok()) return i.error();
    return inner_->supported_sm_clocks(i.value());
  }
  Result<ClockCapState> clock_cap(int gpu) override {
    auto i = inner(gpu);
    if (!i.ok()) return i.error();
    return inner_->clock_cap(i.value());
  }
  Status set_sm_clock_cap(int gpu, double hertz) override {
    auto i = inner(gpu);
    if (!i.ok()) return i.error();
    return inner_->set_sm_clock_cap(i.value(), hertz);
  }
  Status restore_clock_cap(int gpu, const ClockCapState& state) override {
    auto i = inner(gpu);
    if (!i.ok()) return i.error();
    return inner_->restore_clock_cap(i.value(), state);
  }

 private:
  Result<int> inner(int gpu) const {
    if (gpu < 0 || gpu >= device_count()) {
      return Err(ErrorCode::kNotFound, name() + ": no selected GPU " + std::to_string(gpu));
    }
    return index_[static_cast<size_t>(gpu)];
  }
  std::unique_ptr<Smi> inner_;
  std::vector<int> index_;  // SMI index per selected GPU
  std::vector<int> label_;  // exported label per selected GPU
};

}  // namespace

Result<std::unique_ptr<Smi>> select_smi_devices(std::unique_ptr<Smi> smi,
                                                const std::vector<SmiDeviceSelector>& devices) {
  std::vector<int> index;
  std::vector<int> label;
  for (const SmiDeviceSelector& d : devices) {
    auto i = smi->device_by_pci_bus_id(d.pci_bus_id);
    if (!i.ok()) {
      return Err(i.error().code, smi->name() + ": GPU " + std::to_string(d.label) + " (PCI " +
                                     d.pci_bus_id + "): " + i.error().message);
    }
    index.push_back(i.value());
    label.push_back(d.label);
  }
  return std::unique_ptr<Smi>(new SelectedSmi(std::move(smi), std::move(index), std::move(label)));
}

}  // namespace novaserve
