// The CUDA profiler: the layer graph on the device (model/cuda/cuda_graph.cuh), CUDA events
// around each layer's forward and backward; and the large-GEMM ceiling.
#include "profiler/cuda_profile.hpp"

#include "core/errors.hpp"
#include "core/units.hpp"
#include "core/cuda_check.hpp"
#include "model/cuda/cuda_graph.cuh"
#include "model/cuda/kernels.cuh"
#include "model/cuda/device_buffer.cuh"

#include <string>
#include <vector>

namespace syncplan {

namespace {

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

// Every layer's forward and backward through the layer graph the GPU runtime trains with: the
// graph's buffers allocated once (CudaGraph checks the device memory), parameters and a batch
// drawn from options.seed as the CPU profiler draws them, then warmup and timed steps.
std::vector<LayerSamples> time_layers(const Model& model, const Workload& workload, const TimingOptions& options) {
  const cuda::CudaContext context;  // the stream (the graph has its own cuBLAS handle)
  cuda::CudaGraph graph(model, workload);
  const cudaStream_t stream = context.stream();
  graph.initialize_parameters(options.seed, stream);
  const TokenBatch batch = random_token_batch(graph.graph(), options.seed);
  graph.set_batch(batch.ids, batch.targets, stream);
  graph.set_dropout_seed(options.seed);

  // forward[i] .. forward[i + 1] bracket layer i's forward; backward[i + 1] .. backward[i] its backward.
  const std::size_t count = graph.layer_count();
  Events forward(count + 1), backward(count + 1);
  std::vector<LayerSamples> samples(count);
  for (int step = 0; step < options.warmup_steps + options.repeats; ++step) {
    graph.zero_gradients(stream);  // the optimizer's part of a step: before the first event, untimed
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward[0], stream));
    for (std::size_t i = 0; i < count; ++i) {
      graph.forward(i, stream);
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(forward[i + 1], stream));
    }
    SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward[count], stream));
    for (std::size_t i = count; i-- > 0;) {
      graph.backward(i, stream);
      SYNCPLAN_CUDA_CHECK(cudaEventRecord(backward[i], stream));
    }
    SYNCPLAN_CUDA_CHECK(cudaEventSynchronize(backward[0]));
    if (step < options.warmup_steps) continue;
    for (std::size_t i = 0; i < count; ++i) {
      const GraphLayer& layer = graph.graph().layers[i];
      samples[i].forward_s.push_back(layer.has_forward() ? forward.seconds(i, i + 1) : 0.0);
      samples[i].backward_s.push_back(layer.has_backward() ? backward.seconds(i + 1, i) : 0.0);
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
  measurement.layers = time_layers(model, workload, options);
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
