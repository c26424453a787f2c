// The CPU and CUDA training devices (runtime/training_device.hpp).
#include "runtime/training_device.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "model/cpu/cpu_graph.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace syncplan {

double IterationCompute::compute_s() const {
  double total = update.duration_s;
  for (const PassTime& pass : forward) total += pass.duration_s;
  for (const PassTime& pass : backward) total += pass.duration_s;
  return total;
}

std::span<float> TrainingDevice::snapshot_buffer(std::size_t) {
  throw InternalError(std::string("TrainingDevice::snapshot_buffer on the ") + name() + " device");
}
void* TrainingDevice::snapshot(std::span<const std::span<float>>, std::span<float>, std::span<float>) {
  throw InternalError(std::string("TrainingDevice::snapshot on the ") + name() + " device");
}
void TrainingDevice::correct(std::span<const std::span<float>>, std::span<const float>, std::span<const float>) {
  throw InternalError(std::string("TrainingDevice::correct on the ") + name() + " device");
}

namespace {

class CpuTrainingDevice final : public TrainingDevice {
 public:
  CpuTrainingDevice(const Model& model, const Workload& workload, const AdamWOptions& adamw, const RunClock& clock)
      : graph_(model, workload), optimizer_(model.param_count(), adamw), clock_(clock) {
    for (std::size_t l = 0; l < graph_.layer_count(); ++l)
      if (model.layers[l].frozen && !graph_.tied(l))
        for (const std::span<float> tensor : graph_.layer_parameters(l)) frozen_.push_back(tensor);
    frozen_copy_.resize(frozen_.size());
    compute_.forward.resize(graph_.layer_count());
    compute_.backward.resize(graph_.layer_count());
  }

  const char* name() const override { return "cpu"; }
  bool asynchronous() const override { return false; }
  std::size_t layer_count() const override { return graph_.layer_count(); }
  std::int64_t parameter_count() const override { return static_cast<std::int64_t>(graph_.parameters().size()); }
  void initialize(std::uint64_t seed) override { graph_.initialize_parameters(seed); }
  void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets,
                 std::uint64_t dropout_seed) override {
    graph_.set_batch(ids, targets);
    graph_.set_dropout_seed(dropout_seed);
  }
  void begin() override { graph_.zero_gradients(); }
  void forward(std::size_t layer) override {
    const double start_s = clock_.now_s();
    graph_.forward(layer);
    compute_.forward.at(layer) = {start_s, clock_.now_s() - start_s};
  }
  void* backward(std::size_t layer) override {
    const double start_s = clock_.now_s();
    graph_.backward(layer);
    compute_.backward.at(layer) = {start_s, clock_.now_s() - start_s};
    return nullptr;
  }
  void step() override {
    const double start_s = clock_.now_s();
    for (std::size_t t = 0; t < frozen_.size(); ++t) frozen_copy_[t].assign(frozen_[t].begin(), frozen_[t].end());
    optimizer_.step(graph_.parameters(), graph_.gradients());
    for (std::size_t t = 0; t < frozen_.size(); ++t)
      std::copy(frozen_copy_[t].begin(), frozen_copy_[t].end(), frozen_[t].begin());
    compute_.update = {start_s, clock_.now_s() - start_s};
  }
  IterationCompute finish() override {
    compute_.loss = graph_.loss();
    return compute_;
  }
  std::vector<std::span<float>> layer_buffers(std::size_t layer, bool gradients) override {
    return gradients ? graph_.layer_gradients(layer) : graph_.layer_parameters(layer);
  }
  void save(TrainingState& state) const override {
    state.adam_step = optimizer_.step_count();
    state.parameters.assign(graph_.parameters().begin(), graph_.parameters().end());
    state.adam_m.assign(optimizer_.first_moment().begin(), optimizer_.first_moment().end());
    state.adam_v.assign(optimizer_.second_moment().begin(), optimizer_.second_moment().end());
  }
  void restore(const TrainingState& state) override {
    if (state.parameters.size() != graph_.parameters().size())
      throw InputError("AdamW state: " + std::to_string(state.parameters.size()) + " parameters, the model has " +
                       std::to_string(graph_.parameters().size()));
    optimizer_.restore(state.adam_m, state.adam_v, state.adam_step);  // checks the moments' lengths first
    std::copy(state.parameters.begin(), state.parameters.end(), graph_.parameters().begin());
  }

 private:
  cpu::CpuGraph graph_;
  AdamW optimizer_;
  const RunClock& clock_;
  std::vector<std::span<float>> frozen_;
  std::vector<std::vector<float>> frozen_copy_;
  IterationCompute compute_;
};

// Throws the error a GPU trainer call reported.
void check(const AbiStatus& status) { throw_abi_status(status, "GPU trainer"); }

class CudaTrainingDevice final : public TrainingDevice {
 public:
  CudaTrainingDevice(const GpuTrainingEntryPoints& entry, const Model& model, const Workload& workload,
                     const AdamWOptions& adamw, int device, const RunClock& clock)
      : entry_(entry), clock_(clock) {
    AbiStatus status;
    entry_.create(&model, &workload, &adamw, device, &state_, &status);
    check(status);
    layers_ = model.layers.size();
    times_.resize(layers_);
    for (std::size_t l = 0; l < layers_; ++l) {
      std::vector<CommBuffer> found(kMaxTensorsPerLayer);
      for (const bool gradients : {false, true}) {
        std::size_t count = 0;
        entry_.layer_buffers(state_, l, gradients ? 1 : 0, found.data(), found.size(), &count, &status);
        check(status);
        std::vector<std::span<float>>& into = (gradients ? gradients_ : parameters_).emplace_back();
        for (std::size_t t = 0; t < count; ++t) into.emplace_back(found[t].data, found[t].count);
      }
    }
  }
  ~CudaTrainingDevice() override { entry_.destroy(state_); }
  CudaTrainingDevice(const CudaTrainingDevice&) = delete;
  CudaTrainingDevice& operator=(const CudaTrainingDevice&) = delete;

  const char* name() const override { return "cuda"; }
  bool asynchronous() const override { return true; }
  std::size_t layer_count() const override { return layers_; }
  std::int64_t parameter_count() const override { return entry_.parameter_count(state_); }
  void initialize(std::uint64_t seed) override { call([&](AbiStatus* s) { entry_.initialize(state_, seed, s); }); }
  void set_batch(std::span<const std::int64_t> ids, std::span<const std::int64_t> targets,
                 std::uint64_t dropout_seed) override {
    if (ids.size() != targets.size())
      throw InternalError("set_batch: " + std::to_string(ids.size()) + " ids, " + std::to_string(targets.size()) +
                          " targets");
    call([&](AbiStatus* s) { entry_.set_batch(state_, ids.data(), targets.data(), ids.size(), dropout_seed, s); });
  }
  void begin() override {
    origin_s_ = clock_.now_s();
    call([&](AbiStatus* s) { entry_.begin(state_, s); });
  }
  void forward(std::size_t layer) override { call([&](AbiStatus* s) { entry_.forward(state_, layer, s); }); }
  void* backward(std::size_t layer) override {
    void* ready = nullptr;
    call([&](AbiStatus* s) { entry_.backward(state_, layer, &ready, s); });
    return ready;
  }
  void step() override { call([&](AbiStatus* s) { entry_.step(state_, s); }); }
  IterationCompute finish() override {
    IterationCompute compute;
    GpuIterationTimes update;
    call([&](AbiStatus* s) { entry_.finish(state_, &compute.loss, times_.data(), times_.size(), &update, s); });
    for (const GpuIterationTimes& layer : times_) {
      compute.forward.push_back({origin_s_ + layer.forward_start_s, layer.forward_s});
      compute.backward.push_back({origin_s_ + layer.backward_start_s, layer.backward_s});
    }
    compute.update = {origin_s_ + update.forward_start_s, update.forward_s};
    return compute;
  }
  std::vector<std::span<float>> layer_buffers(std::size_t layer, bool gradients) override {
    return (gradients ? gradients_ : parameters_).at(layer);
  }
  void save(TrainingState& state) const override {
    const auto n = static_cast<std::size_t>(parameter_count());
    state.parameters.resize(n);
    state.adam_m.resize(n);
    state.adam_v.resize(n);
    AbiStatus status;
    entry_.get_state(state_, state.parameters.data(), state.adam_m.data(), state.adam_v.data(), &state.adam_step,
                     &status);
    check(status);
  }
  bool device_snapshots() const override {
    return entry_.snapshot_buffer != nullptr && entry_.snapshot != nullptr && entry_.correct != nullptr;
  }
  std::span<float> snapshot_buffer(std::size_t floats) override {
    if (!device_snapshots()) return TrainingDevice::snapshot_buffer(floats);
    float* memory = nullptr;
    call([&](AbiStatus* s) { entry_.snapshot_buffer(state_, floats, &memory, s); });
    return {memory, floats};
  }
  void* snapshot(std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean) override {
    if (!device_snapshots()) return TrainingDevice::snapshot(tensors, own, mean);
    const std::vector<CommBuffer> buffers = comm_buffers(tensors, own.size(), mean.size());
    void* ready = nullptr;
    call([&](AbiStatus* s) { entry_.snapshot(state_, buffers.data(), buffers.size(), own.data(), mean.data(), &ready, s); });
    return ready;
  }
  void correct(std::span<const std::span<float>> tensors, std::span<const float> own,
               std::span<const float> mean) override {
    if (!device_snapshots()) return TrainingDevice::correct(tensors, own, mean);
    const std::vector<CommBuffer> buffers = comm_buffers(tensors, own.size(), mean.size());
    call([&](AbiStatus* s) { entry_.correct(state_, buffers.data(), buffers.size(), own.data(), mean.data(), s); });
  }
  void restore(const TrainingState& state) override {
    const auto n = static_cast<std::size_t>(parameter_count());
    for (const std::vector<float>* tensor : {&state.parameters, &state.adam_m, &state.adam_v})
      if (tensor->size() != n)
        throw InputError("AdamW state: a tensor of " + std::to_string(tensor->size()) + " floats, the model has " +
                         std::to_string(n) + " parameters");
    if (state.adam_step < 0) throw InputError("AdamW state: step counter " + std::to_string(state.adam_step) + " < 0");
    call([&](AbiStatus* s) {
      entry_.set_state(state_, state.parameters.data(), state.adam_m.data(), state.adam_v.data(), state.adam_step, s);
    });
  }

 private:
  // A layer's tensors: a block has at most a dozen (norms, attention, MLP); room for many more.
  static constexpr std::size_t kMaxTensorsPerLayer = 64;

  // The tensors of a snapshot as the table's buffers; InternalError when `own` or `mean` (of
  // `own_floats`, `mean_floats`) is shorter than the tensors together.
  static std::vector<CommBuffer> comm_buffers(std::span<const std::span<float>> tensors, std::size_t own_floats,
                                              std::size_t mean_floats) {
    std::vector<CommBuffer> buffers;
    std::size_t total = 0;
    for (const std::span<float> tensor : tensors) {
      buffers.push_back({tensor.data(), tensor.size()});
      total += tensor.size();
    }
    if (own_floats < total || mean_floats < total)
      throw InternalError("snapshot of " + std::to_string(total) + " floats into buffers of " +
                          std::to_string(own_floats) + " and " + std::to_string(mean_floats));
    return buffers;
  }

  template <class Call>
  void call(Call&& body) {
    AbiStatus status;
    body(&status);
    check(status);
  }

  GpuTrainingEntryPoints entry_;
  const RunClock& clock_;
  void* state_ = nullptr;
  std::size_t layers_ = 0;
  std::vector<std::vector<std::span<float>>> parameters_, gradients_;
  std::vector<GpuIterationTimes> times_;
  double origin_s_ = 0;
};

}  // namespace

std::unique_ptr<TrainingDevice> make_cpu_training_device(const Model& model, const Workload& workload,
                                                         const AdamWOptions& adamw, const RunClock& clock) {
  // The graph's buffers and AdamW's two moments (4 bytes each per parameter), checked before any
  // is allocated: too large a model for this host is bad input (--batch named), not std::bad_alloc.
  cpu::require_host_memory(model, workload, 8.0 * static_cast<double>(model.param_count()), "cpu run");
  return std::make_unique<CpuTrainingDevice>(model, workload, adamw, clock);
}

std::unique_ptr<TrainingDevice> make_cuda_training_device(const GpuBackend& gpu, const Model& model,
                                                          const Workload& workload, const AdamWOptions& adamw,
                                                          int device, const RunClock& clock) {
  const GpuTrainingEntryPoints& entry = gpu.training();
  if (entry.create == nullptr || entry.destroy == nullptr || entry.initialize == nullptr || entry.set_batch == nullptr ||
      entry.begin == nullptr || entry.forward == nullptr || entry.backward == nullptr || entry.step == nullptr ||
      entry.finish == nullptr || entry.layer_buffers == nullptr || entry.get_state == nullptr ||
      entry.set_state == nullptr || entry.parameter_count == nullptr)
    throw FieldError("device", std::string("device cuda: the GPU backend (") + gpu.description() +
                                   ") has no trainer");
  return std::make_unique<CudaTrainingDevice>(entry, model, workload, adamw, device, clock);
}

}  // namespace syncplan
