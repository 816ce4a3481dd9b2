// softplus(x) = log(1 + exp(x)) on tensors, written stably and built from the engine's
// elementwise ops only, so that it runs on the tensors' device (siglip, debiased), with the
// log(1 + x) it needs (cosent too).
#pragma once
#include "engine/nce.h"

namespace nce::losses {

// log(1 + x) for finite x > -1, accurate to a few ulps even where x is tiny, where
// log(1 + x) would round 1 + x to 1 and lose x. The engine has no log1p kernel, so this is
// Goldberg's trick ("What every computer scientist should know about floating-point
// arithmetic", Theorem 4): with u = 1 + x rounded,
//   log1p(x) = log(u) · x / (u - 1)   where u != 1     (the rounding of u cancels in the ratio)
//            = x                      where u = 1      (|x| below half an ulp of 1)
inline Tensor log_one_plus(const Tensor& x) {
    Tensor u = x + 1.0;
    Tensor u_minus_one = u - 1.0;
    Tensor moved = step(abs(u_minus_one));                   // 1 where u != 1, else 0
    Tensor divisor = keep_where(u_minus_one, moved, 1.0);    // u - 1, or 1 where that is 0
    return log(u) * (x / divisor) + x * (1.0 - moved);       // where u = 1, log(u) = 0: only x is left
}

// softplus(x) = max(x, 0) + log1p(exp(-|x|)): exp only ever sees a number <= 0, so it never
// overflows, and log1p keeps the tiny exp(-|x|) of a large |x| that log(1 + .) rounds away.
// Its derivative is sigmoid(x) (the engine's sigmoid is written just as stably).
inline Tensor softplus(const Tensor& x) { return relu(x) + log_one_plus(exp(-abs(x))); }

}  // namespace nce::losses
