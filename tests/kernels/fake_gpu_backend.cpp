// A stand-in for libsyncplan_gpu.so, for machines without CUDA: the same entry point and table
// (profiler/gpu_backend.hpp), one "device", and a measure_cuda that reports bad input naming the
// model and batch it was given, so the CLI tests can see that syncplan found, loaded and called
// it through the C ABI, and turned the status back into an exit-2 error. Built a second time
// with FAKE_GPU_BACKEND_VERSION = 999, a library of another build, which must be refused.
//
// Built a third time with FAKE_GPU_TRAINER = 1 (fake_gpu_trainer): a "device" that is host memory,
// so that `syncplan run --device cuda` runs its whole GPU path on any machine: the trainer's
// entry points over CpuGraph and AdamW (the CPU trainer's numbers, so a run must equal the CPU
// run bit for bit), delayed averaging's snapshots and corrections (unless $FAKE_GPU_NO_SNAPSHOTS
// is set), and "NCCL" entry points whose communicator is the MPI backend table.
#include "profiler/gpu_backend.hpp"

#include <cstdio>
#include <cstdlib>

#if FAKE_GPU_TRAINER
#include "comm/mpi_communicator.hpp"
#include "core/errors.hpp"
#include "model/cpu/cpu_graph.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>
#endif

#ifndef FAKE_GPU_TRAINER
#define FAKE_GPU_TRAINER 0
#endif
#ifndef FAKE_GPU_BACKEND_VERSION
#define FAKE_GPU_BACKEND_VERSION ::syncplan::kGpuBackendVersion
#endif

namespace {

using namespace syncplan;

int fail(AbiStatus* status, int code, const char* message) {
  status->code = code;
  std::snprintf(status->message, kAbiMessageBytes, "%s", message);
  return code;
}

int device_count(AbiStatus* status) {
  status->code = kAbiOk;
  status->message[0] = '\0';
  // The trainer's: $FAKE_GPU_DEVICES (a test of too few devices), else room for a few ranks.
  const char* devices = FAKE_GPU_TRAINER ? std::getenv("FAKE_GPU_DEVICES") : nullptr;
  return devices != nullptr ? std::atoi(devices) : FAKE_GPU_TRAINER ? 8 : 1;
}

int measure(const Model* model, const Workload* workload, const TimingOptions*, Measurement*, AbiStatus* status) {
  status->code = kAbiInputError;
  std::snprintf(status->message, kAbiMessageBytes, "fake GPU backend: measure_cuda called for model '%s' at batch %lld",
                model->name.c_str(), static_cast<long long>(workload->batch));
  return status->code;
}

int device_alloc(int, std::size_t, void**, AbiStatus* status) {
  return fail(status, kAbiLibraryError, "fake GPU backend: no device memory");
}

void device_free(void*) {}

int copy(int, void*, const void*, std::size_t, AbiStatus* status) {
  return fail(status, kAbiLibraryError, "fake GPU backend: no device memory");
}


#if FAKE_GPU_TRAINER
// ---- the trainer over CpuGraph, as runtime/training_device.cpp's CPU device computes ----------

template <class Body>
int guarded(AbiStatus* status, Body&& body) {
  return abi_call(status, std::forward<Body>(body));
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point origin) { return std::chrono::duration<double>(Clock::now() - origin).count(); }

struct FakeTrainer {
  FakeTrainer(const Model& model, const Workload& workload, const AdamWOptions& adamw)
      : graph(model, workload), optimizer(model.param_count(), adamw), times(graph.layer_count()) {
    for (std::size_t l = 0; l < graph.layer_count(); ++l)
      if (model.layers[l].frozen && !graph.tied(l))
        for (const std::span<float> tensor : graph.layer_parameters(l)) frozen.push_back(tensor);
  }
  cpu::CpuGraph graph;
  AdamW optimizer;
  std::vector<std::span<float>> frozen;
  std::vector<GpuIterationTimes> times;
  GpuIterationTimes update;
  Clock::time_point origin;
  std::vector<std::vector<float>> snapshots;  // snapshot_buffer's "device memory"
};

FakeTrainer& fake(void* state) { return *static_cast<FakeTrainer*>(state); }

int train_create(const Model* model, const Workload* workload, const AdamWOptions* adamw, int, void** out,
                 AbiStatus* status) {
  return guarded(status, [&] { *out = new FakeTrainer(*model, *workload, *adamw); });
}
void train_destroy(void* state) { delete static_cast<FakeTrainer*>(state); }
int train_initialize(void* state, std::uint64_t seed, AbiStatus* status) {
  return guarded(status, [&] { fake(state).graph.initialize_parameters(seed); });
}
int train_set_batch(void* state, const std::int64_t* ids, const std::int64_t* targets, std::size_t tokens,
                    std::uint64_t dropout_seed, AbiStatus* status) {
  return guarded(status, [&] {
    fake(state).graph.set_batch({ids, tokens}, {targets, tokens});
    fake(state).graph.set_dropout_seed(dropout_seed);
  });
}
int train_begin(void* state, AbiStatus* status) {
  return guarded(status, [&] {
    fake(state).origin = Clock::now();
    fake(state).graph.zero_gradients();
  });
}
// Runs `pass` and notes when it started and how long it took, in seconds after the origin.
template <class Pass>
void timed(FakeTrainer& t, double& start_s, double& duration_s, Pass&& pass) {
  start_s = since(t.origin);
  pass();
  duration_s = since(t.origin) - start_s;
}
int train_forward(void* state, std::size_t layer, AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    GpuIterationTimes& at = t.times.at(layer);
    timed(t, at.forward_start_s, at.forward_s, [&] { t.graph.forward(layer); });
  });
}
int train_backward(void* state, std::size_t layer, void** ready_event, AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    GpuIterationTimes& at = t.times.at(layer);
    timed(t, at.backward_start_s, at.backward_s, [&] { t.graph.backward(layer); });
    *ready_event = nullptr;  // computed on return; the MPI table takes no event
  });
}
int train_step(void* state, AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    timed(t, t.update.forward_start_s, t.update.forward_s, [&] {
      std::vector<std::vector<float>> kept;
      for (const std::span<float> tensor : t.frozen) kept.emplace_back(tensor.begin(), tensor.end());
      t.optimizer.step(t.graph.parameters(), t.graph.gradients());
      for (std::size_t i = 0; i < kept.size(); ++i) std::copy(kept[i].begin(), kept[i].end(), t.frozen[i].begin());
    });
  });
}
int train_finish(void* state, double* loss, GpuIterationTimes* times, std::size_t layers, GpuIterationTimes* update,
                 AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    if (layers != t.times.size()) throw InternalError("fake trainer: finish for a wrong layer count");
    std::copy(t.times.begin(), t.times.end(), times);
    *update = t.update;
    *loss = t.graph.loss();
  });
}
int train_layer_buffers(void* state, std::size_t layer, int gradients, CommBuffer* out, std::size_t capacity,
                        std::size_t* count, AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    const std::vector<std::span<float>> tensors = gradients ? t.graph.layer_gradients(layer) : t.graph.layer_parameters(layer);
    if (tensors.size() > capacity) throw InternalError("fake trainer: too many tensors");
    for (std::size_t i = 0; i < tensors.size(); ++i) out[i] = {tensors[i].data(), tensors[i].size()};
    *count = tensors.size();
  });
}
int train_get_state(const void* state, float* parameters, float* first_moment, float* second_moment,
                    std::int64_t* adam_step, AbiStatus* status) {
  return guarded(status, [&] {
    const FakeTrainer& t = *static_cast<const FakeTrainer*>(state);
    std::copy(t.graph.parameters().begin(), t.graph.parameters().end(), parameters);
    std::copy(t.optimizer.first_moment().begin(), t.optimizer.first_moment().end(), first_moment);
    std::copy(t.optimizer.second_moment().begin(), t.optimizer.second_moment().end(), second_moment);
    *adam_step = t.optimizer.step_count();
  });
}
int train_set_state(void* state, const float* parameters, const float* first_moment, const float* second_moment,
                    std::int64_t adam_step, AbiStatus* status) {
  return guarded(status, [&] {
    FakeTrainer& t = fake(state);
    const std::size_t n = t.graph.parameters().size();
    std::copy(parameters, parameters + n, t.graph.parameters().begin());
    t.optimizer.restore({first_moment, n}, {second_moment, n}, adam_step);
  });
}
std::int64_t train_parameter_count(const void* state) {
  return static_cast<std::int64_t>(static_cast<const FakeTrainer*>(state)->graph.parameters().size());
}

// Delayed averaging's entry points, on the host "device" memory as the executor computes them on
// the CPU (copies; p + (mean - own) in float), so that a delayed run equals the CPU run bit for bit.
int train_snapshot_buffer(void* state, std::size_t floats, float** out, AbiStatus* status) {
  return guarded(status, [&] {
    std::vector<float>& memory = fake(state).snapshots.emplace_back(std::max<std::size_t>(floats, 1));
    *out = memory.data();
  });
}
int train_snapshot(void*, const CommBuffer* tensors, std::size_t count, float* own, float* mean, void** ready_event,
                   AbiStatus* status) {
  return guarded(status, [&] {
    for (std::size_t t = 0; t < count; ++t) {
      own = std::copy(tensors[t].data, tensors[t].data + tensors[t].count, own);
      mean = std::copy(tensors[t].data, tensors[t].data + tensors[t].count, mean);
    }
    *ready_event = nullptr;  // copied on return; the MPI table takes no event
  });
}
int train_correct(void*, const CommBuffer* tensors, std::size_t count, const float* own, const float* mean,
                  AbiStatus* status) {
  return guarded(status, [&] {
    for (std::size_t t = 0; t < count; ++t)
      for (std::size_t i = 0; i < tensors[t].count; ++i) {
        float& p = tensors[t].data[i];
        p = p + (*mean++ - *own++);
      }
  });
}

// ---- "NCCL": the MPI backend table on the host "device" memory ---------------------------------

int nccl_unique_id(unsigned char* id, AbiStatus* status) {
  return guarded(status, [&] { std::memset(id, 7, kNcclUniqueIdBytes); });
}
int nccl_open(const NcclSetup* setup, CommBackendTable* table, AbiStatus* status) {
  return guarded(status, [&] {
    for (std::size_t i = 0; i < kNcclUniqueIdBytes; ++i)
      if (setup->unique_id[i] != 7) throw InternalError("fake NCCL: rank 0's unique id did not arrive");
    *table = make_mpi_backend_table(setup->rank, setup->size, setup->deadline_s);
    table->name = "fake-nccl";
    table->buffer_place = "device";
  });
}
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const GpuBackendTable* syncplan_gpu_backend() {
  static const GpuBackendTable table = [] {
    GpuBackendTable made;
    made.version = FAKE_GPU_BACKEND_VERSION;
    made.description = "fake GPU backend (tests/kernels)";
    made.device_count = device_count;
    made.measure_cuda = measure;
    made.device_alloc = device_alloc;
    made.device_free = device_free;
    made.copy = copy;
#if FAKE_GPU_TRAINER
    made.description = "fake GPU trainer (tests/kernels: host memory, MPI)";
    made.training = {train_create, train_destroy, train_initialize, train_set_batch, train_begin, train_forward,
                     train_backward, train_step, train_finish, train_layer_buffers, train_get_state, train_set_state,
                     train_parameter_count};
    // $FAKE_GPU_NO_SNAPSHOTS: a backend without delayed averaging's entry points (refused for such plans).
    if (std::getenv("FAKE_GPU_NO_SNAPSHOTS") == nullptr) {
      made.training.snapshot_buffer = train_snapshot_buffer;
      made.training.snapshot = train_snapshot;
      made.training.correct = train_correct;
    }
    made.nccl = {nccl_unique_id, nccl_open};
#endif
    return made;  // without FAKE_GPU_TRAINER, nccl and training stay null: "built without NCCL"
  }();
  return &table;
}
