#include "engine/ops.h"

namespace nce {

// Masked mean pooling: one vector per sequence, the mean of its real tokens.
//
//   x: [B, T, D]   mask: [B, T] (nonzero = token, 0 = padding)   y: [B, D]
//   is_token[b,t] = 1 if mask[b,t] != 0 else 0
//   count_b       = sum_t is_token[b,t]                       (must be >= 1)
//   y[b,:]        = sum_t is_token[b,t] · x[b,t,:] / count_b
//
// y is linear in x, and x[b,t,:] reaches only y[b,:], with the weight
// weight[b,t] = is_token[b,t] / count_b, so
//   dL/dx[b,t,:] = weight[b,t] · dL/dy[b,:]          [B, T, 1] ⊙ [B, 1, D] -> [B, T, D]
// Padding positions get a zero gradient. The mask is data: it gets no gradient.
Var masked_mean_pool(const Var& x, const Tensor& mask) {
    const Tensor& xv = x.value();
    check_floating(xv, "masked_mean_pool", "x");
    NCE_CHECK(xv.rank() == 3, "masked_mean_pool: x must be [B, T, D], got {}", shape_string(xv.shape()));
    NCE_CHECK(mask.defined(), "masked_mean_pool: the mask is missing; pass a [B, T] mask (nonzero = token)");
    NCE_CHECK(mask.rank() == 2 && mask.size(0) == xv.size(0) && mask.size(1) == xv.size(1),
              "masked_mean_pool: mask {} does not match x {}; the mask must be [B, T] = [{}, {}]",
              shape_string(mask.shape()), shape_string(xv.shape()), xv.size(0), xv.size(1));
    const int64_t batch = xv.size(0), tokens = xv.size(1), features = xv.size(2);

    // 1 where the mask is nonzero, else 0, in x's dtype (the mask may be float or int64).
    Tensor mask_in_x_dtype = mask.to(xv.dtype()).to(xv.device());
    Tensor is_token = keep_where(full_like(mask_in_x_dtype, 1.0), mask_in_x_dtype, 0.0);  // [B, T]
    Tensor count = sum(is_token, 1, true);                                                  // [B, 1]

    backend_for(is_token.device()).check_rows_nonzero(is_token, "masked_mean_pool: row {} of mask " + shape_string(mask.shape()) +
                                                          " has no valid token; every row needs at least one token "
                                                          "(a nonzero mask entry)");

    Tensor weight = is_token / count;  // [B, T]
    // Padding is selected away, not multiplied by 0: a NaN or inf there must not leak into y.
    Tensor tokens_only = keep_where(xv, is_token.reshape({batch, tokens, 1}), 0.0);  // [B, T, D]
    Tensor y = sum(tokens_only, 1) / count;                                            // [B, D]

    return Var::from_op("masked_mean_pool", std::move(y), {x},
        [weight, batch, tokens, features](const Tensor& dy) -> Grads {
            // dL/dx[b,t,:] = weight[b,t] · dL/dy[b,:]
            return {weight.reshape({batch, tokens, 1}) * dy.reshape({batch, 1, features})};
        });
}

}  // namespace nce
