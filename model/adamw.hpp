// AdamW, the optimizer the CPU runtime trains with: Adam with decoupled weight decay over one flat
// parameter arena (the layer graph's), on the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace syncplan {

/// AdamW's hyperparameters: torch.optim.AdamW's defaults.
/// The largest learning rate AdamW takes (exclusive): Adam moves every parameter by about lr per
/// step whatever its gradient, so a rate of 10 or more sends any model's weights (std ~0.02) to
/// overflow within a few steps.
inline constexpr double kMaxLearningRate = 10;

struct AdamWOptions {
  double learning_rate = 1e-3;  ///< lr, in (0, kMaxLearningRate)
  double beta1 = 0.9;           ///< first-moment decay, in [0, 1)
  double beta2 = 0.999;         ///< second-moment decay, in [0, 1)
  double eps = 1e-8;            ///< added to sqrt(v̂) (> 0)
  double weight_decay = 0.01;   ///< decoupled decay per unit of learning rate (>= 0)
};

/// AdamW (Loshchilov and Hutter, "Decoupled Weight Decay Regularization", ICLR 2019, Algorithm 2),
/// as torch.optim.AdamW computes it: with g the gradient and t the step number from 1,
///   p <- p (1 - lr wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;
///   p <- p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
/// Its moments have one element per parameter; its step counter t advances once per step().
class AdamW {
 public:
  /// An optimizer for `parameter_count` parameters, moments zero, t = 0. Throws InputError naming
  /// the field when an option is outside its range.
  AdamW(std::int64_t parameter_count, const AdamWOptions& options = {});

  /// One optimizer step over all parameters: t += 1, then the update above element by element.
  /// `parameters` and `gradients` have parameter_count elements (InternalError otherwise).
  void step(std::span<float> parameters, std::span<const float> gradients);

  /// Steps taken (t).
  std::int64_t step_count() const { return step_count_; }
  const AdamWOptions& options() const { return options_; }

  /// The first and second moments m and v, one element per parameter (a checkpoint saves them).
  std::span<const float> first_moment() const { return m_; }
  std::span<const float> second_moment() const { return v_; }
  /// Restores a saved state: the moments (parameter_count elements each, InputError "AdamW
  /// state: ..." otherwise) and the step counter t (>= 0), so that the next step() continues
  /// bit-identically to the optimizer they were saved from.
  void restore(std::span<const float> first_moment, std::span<const float> second_moment, std::int64_t step_count);

 private:
  AdamWOptions options_;
  std::vector<float> m_, v_;
  std::int64_t step_count_ = 0;
};

}  // namespace syncplan
