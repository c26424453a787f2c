// The CUDA profiler: device buffers for every op of every layer, a training step's passes
// between CUDA events, medians over repeats; and the large-GEMM ceiling.
#include "profiler/cuda_profile.hpp"

#include "core/errors.hpp"
#include "core/units.hpp"
#include "core/cuda_check.hpp"
#include "model/cuda/kernels.cuh"
#include "model/cuda/ops.cuh"

#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace syncplan {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Device memory left free beyond the profiler's buffers: cuBLAS's workspace, the kernels' modules
// as they load lazily, and cudaMalloc's rounding of a few thousand allocations.
constexpr std::int64_t kHeadroomBytes = std::int64_t{1} << 30;

// Bytes as GiB with one decimal, e.g. "23.4".
std::string gib_text(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << bytes / kBytesPerGiB;
  return text.str();
}

// CUDA events, destroyed on scope exit (errors ignored: it also runs while an error unwinds).
class Events {
 public:
  explicit Events(std::size_t count) : events_(count, nullptr) {
    for (cudaEvent_t& event : events_) SYNCPLAN_CUDA_CHECK(cudaEventCreate(&event));
  }
  ~Events() {
    for (cudaEvent_t event : events_)
      if (event != nullptr) cudaEventDestroy(event);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }
  // Seconds from event `from` to event `to` (both recorded and complete).
  double seconds(std::size_t from, std::size_t to) const {
    float milliseconds = 0;
    SYNCPLAN_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, events_[from], events_[to]));
    return static_cast<double>(milliseconds) / units::kMillisecondsPerSecond;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

template <class Element>
struct OpBench {
  const LayerOp* op;
  cuda::DeviceTensors<Element> tensors;
  std::uint64_t seed;
  bool runs(Pass pass) const {
    return !tensors.tensors().empty() && (pass == Pass::kForward || op_has_backward(*op));
  }
};

// Enqueues one pass of a layer's ops (in reverse for the backward); whether any kernel ran.
template <class Element>
bool enqueue_layer_pass(std::vector<OpBench<Element>>& ops, const Workload& workload, Pass pass,
                        const cuda::CudaContext& context) {
  bool ran = false;
  const auto run = [&](OpBench<Element>& bench) {
    if (!bench.runs(pass)) return;
    cuda::run_op_cuda(*bench.op, workload, pass, bench.tensors, bench.seed, context);
    ran = true;
  };
  if (pass == Pass::kForward)
    for (OpBench<Element>& bench : ops) run(bench);
  else
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) run(*it);
  return ran;
}

template <class Element>
std::vector<LayerSamples> time_layers(const Model& model, const Workload& workload, const TimingOptions& options,
                                      const std::string& device_name) {
  std::int64_t buffer_bytes = 0;
  for (const ModelLayer& layer : model.layers)
    for (const LayerOp& op : layer.ops)
      buffer_bytes += op_tensor_bytes(op_tensors(op, workload), workload.dtype) +
                      cuda::op_workspace_elements(op, workload) * static_cast<std::int64_t>(sizeof(Element));
  std::size_t free_bytes = 0, total_bytes = 0;
  SYNCPLAN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::string too_large = "--batch " + std::to_string(workload.batch) + " --seq " +
                                std::to_string(workload.seq) + ": the cuda profile of " + model.name + " needs " +
                                gib_text(static_cast<double>(buffer_bytes)) + " GiB of device memory (and " +
                                gib_text(static_cast<double>(kHeadroomBytes)) + " GiB to spare), more than the " +
                                gib_text(static_cast<double>(free_bytes)) + " GiB free on " + device_name +
                                "; use a smaller batch or sequence";
  if (buffer_bytes + kHeadroomBytes > static_cast<std::int64_t>(free_bytes)) throw InputError(too_large);

  const cuda::CudaContext context;
  // Every buffer of every layer at once, as in training (activations are kept for the backward).
  std::vector<std::vector<OpBench<Element>>> layers(model.layers.size());
  std::uint64_t seed = options.seed;
  try {
    for (std::size_t i = 0; i < model.layers.size(); ++i)
      for (const LayerOp& op : model.layers[i].ops) {
        ++seed;
        layers[i].push_back(OpBench<Element>{
            &op,
            cuda::DeviceTensors<Element>(op_tensors(op, workload), cuda::op_workspace_elements(op, workload), seed,
                                         context.stream()),
            seed});
      }
  } catch (const cuda::DeviceOutOfMemory&) {
    throw InputError(too_large + " (cudaMalloc ran out)");  // the headroom was too small: still bad input
  }

  // forward[i] .. forward[i + 1] bracket layer i's forward; backward[i + 1] .. backward[i] its backward.
  const std::size_t count = layers.size();
  Events forward(count + 1), backward(count + 1);
  std::vector<char> forward_ran(count), backward_ran(count);
  std::vector<LayerSamples> samples(count);
  for (int step = 0; step < options.warmup_steps + options.repeats; ++step) {
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward[0], context.stream()));
    for (std::size_t i = 0; i < count; ++i) {
      forward_ran[i] = enqueue_layer_pass(layers[i], workload, Pass::kForward, context);
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward[i + 1], context.stream()));
    }
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward[count], context.stream()));
    for (std::size_t i = count; i-- > 0;) {
      backward_ran[i] = enqueue_layer_pass(layers[i], workload, Pass::kBackward, context);
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward[i], context.stream()));
    }
    SYNCPLAN_CUDA_CHECK(cudaEventSynchronize(backward[0]));
    if (step < options.warmup_steps) continue;
    for (std::size_t i = 0; i < count; ++i) {
      samples[i].forward_s.push_back(forward_ran[i] ? forward.seconds(i, i + 1) : 0.0);
      samples[i].backward_s.push_back(backward_ran[i] ? backward.seconds(i + 1, i) : 0.0);
    }
  }
  return samples;
}

// The best FLOP/s of square GEMMs (2 n^3 FLOPs each) over sizes, one untimed run and 5 timed
// ones per size.
template <class Element>
double gemm_ceiling(std::string& shape) {
  const cuda::CudaContext context;
  double best_flops_per_s = 0;
  for (const std::int64_t n : {std::int64_t{4096}, std::int64_t{8192}, std::int64_t{16384}}) {
    const auto elements = static_cast<std::size_t>(n * n);
    const cuda::DeviceBuffer a(elements * sizeof(Element)), b(elements * sizeof(Element)),
        c(elements * sizeof(Element));
    const std::span<Element> a_values(static_cast<Element*>(a.data()), elements),
        b_values(static_cast<Element*>(b.data()), elements), c_values(static_cast<Element*>(c.data()), elements);
    cuda::fill_uniform(1, a_values, context.stream());
    cuda::fill_uniform(2, b_values, context.stream());
    Events events(2);
    for (int repeat = 0; repeat < 6; ++repeat) {
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(events[0], context.stream()));
      cuda::square_gemm(n, std::span<const Element>(a_values), std::span<const Element>(b_values), c_values,
                        context.blas(), context.stream());
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(events[1], context.stream()));
      SYNCPLAN_CUDA_CHECK(cudaEventSynchronize(events[1]));
      if (repeat == 0) continue;  // untimed: cuBLAS picks and loads its kernel
      const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
      const double flops_per_s = flops / events.seconds(0, 1);
      if (flops_per_s > best_flops_per_s) {
        best_flops_per_s = flops_per_s;
        shape = std::to_string(n) + " x " + std::to_string(n) + " x " + std::to_string(n) + " " +
                (sizeof(Element) == 2 ? "bf16" : "fp32") + " (cuBLAS)";
      }
    }
  }
  return best_flops_per_s;
}

template <class Element>
Measurement measure(const Model& model, const Workload& workload, const TimingOptions& options,
                    const std::string& device_name) {
  Measurement measurement;
  measurement.source = "measured:" + device_name;
  measurement.layers = time_layers<Element>(model, workload, options, device_name);
  if (options.gemm_ceiling) measurement.gemm_ceiling_flops_per_s = gemm_ceiling<Element>(measurement.gemm_ceiling_shape);
  return measurement;
}

}  // namespace

std::string cuda_device_name() {
  int count = 0;
  // Not through the check macro: no driver or no device is an answer here, not a failure.
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    const std::string reason = error != cudaSuccess ? cudaGetErrorString(error) : "cudaGetDeviceCount found 0 devices";
    cudaGetLastError();  // clear it
    throw InputError("--device cuda: no CUDA device visible (" + reason +
                     "); use --device cpu, or --device estimate --gpu NAME for a roofline estimate");
  }
  cudaDeviceProp properties{};
  SYNCPLAN_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  return properties.name;
}

Measurement measure_cuda(const Model& model, const Workload& workload, const TimingOptions& options) {
  SYNCPLAN_CHECK(options.warmup_steps >= 0 && options.repeats >= 1);
  const std::string device_name = cuda_device_name();
  SYNCPLAN_CUDA_CHECK(cudaSetDevice(0));
  if (workload.dtype == Dtype::kBf16) return measure<__nv_bfloat16>(model, workload, options, device_name);
  return measure<float>(model, workload, options, device_name);
}

}  // namespace syncplan
