// Shape ops and index_select: forward values against plain loops, the scatter-add backward of
// repeated indices, and errors that name the op. The finite-difference checks of these ops
// are registered in engine/checks/ and run by test_ops_gradcheck.cpp.
#include "tests/test_helpers.h"

namespace nce::testing {
namespace {

// 1, 2, 3, ... in the given shape: every element distinct, so a misplaced one shows.
Tensor counting(const Shape& shape, Dtype dtype) {
    std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i + 1);
    return Tensor::from_vector(values, shape, dtype);
}

// Moving values does no arithmetic, so results must equal the reference exactly.
void check_equal(const Tensor& actual, const std::vector<double>& expected, const Shape& expected_shape) {
    CHECK(actual.shape() == expected_shape);
    CHECK(actual.to_vector() == expected);
}

}  // namespace

TEST_CASE("reshape keeps the row-major order of the elements") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor x = counting({2, 3, 4}, dtype);
        Var y = reshape(Var(x), {4, -1});
        check_equal(y.value(), x.to_vector(), {4, 6});
        CHECK(y.dtype() == dtype);
    }
}

TEST_CASE("permute and transpose move x[i, j, k] to the permuted position") {
    for (Dtype dtype : kFloatDtypes) {
        const int64_t I = 2, J = 3, K = 4;
        Tensor x = counting({I, J, K}, dtype);
        std::vector<double> xs = x.to_vector();

        // permute (2, 0, 1): y[k, i, j] = x[i, j, k]
        std::vector<double> permuted(xs.size());
        for (int64_t i = 0; i < I; ++i)
            for (int64_t j = 0; j < J; ++j)
                for (int64_t k = 0; k < K; ++k) permuted[(k * I + i) * J + j] = xs[(i * J + j) * K + k];
        check_equal(permute(Var(x), {2, 0, 1}).value(), permuted, {K, I, J});
        check_equal(permute(Var(x), {-1, 0, 1}).value(), permuted, {K, I, J});

        // transpose (0, 2): y[k, j, i] = x[i, j, k]
        std::vector<double> transposed(xs.size());
        for (int64_t i = 0; i < I; ++i)
            for (int64_t j = 0; j < J; ++j)
                for (int64_t k = 0; k < K; ++k) transposed[(k * J + j) * I + i] = xs[(i * J + j) * K + k];
        check_equal(transpose(Var(x), 0, 2).value(), transposed, {K, J, I});
        check_equal(transpose(Var(x), -1, 0).value(), transposed, {K, J, I});
    }
}

TEST_CASE("slice takes positions start..end-1 along one axis") {
    for (Dtype dtype : kFloatDtypes) {
        const int64_t A = 2, B = 6, C = 3, start = 2, end = 5;
        Tensor x = counting({A, B, C}, dtype);
        std::vector<double> xs = x.to_vector(), expected;
        for (int64_t a = 0; a < A; ++a)
            for (int64_t b = start; b < end; ++b)
                for (int64_t c = 0; c < C; ++c) expected.push_back(xs[(a * B + b) * C + c]);
        check_equal(slice(Var(x), 1, start, end).value(), expected, {A, end - start, C});

        std::vector<double> last_columns;
        for (int64_t a = 0; a < A; ++a)
            for (int64_t b = 0; b < B; ++b) last_columns.push_back(xs[(a * B + b) * C + 2]);
        check_equal(slice(Var(x), -1, 2, 3).value(), last_columns, {A, B, 1});
        check_equal(slice(Var(x), 0, 1, 1).value(), {}, {0, B, C});
    }
}

TEST_CASE("concat joins parts along an axis, stack along a new one") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor a = counting({2, 3}, dtype);
        Tensor b = mul(counting({2, 1}, dtype), 100.0);  // 100, 200
        std::vector<double> as = a.to_vector(), bs = b.to_vector();

        // axis 1: row r is a's row r, then b's row r.
        std::vector<double> side_by_side;
        for (int64_t r = 0; r < 2; ++r) {
            for (int64_t c = 0; c < 3; ++c) side_by_side.push_back(as[r * 3 + c]);
            side_by_side.push_back(bs[r]);
        }
        check_equal(concat({Var(a), Var(b)}, 1).value(), side_by_side, {2, 4});

        // axis 0: all of a, then all of c.
        Tensor c = mul(counting({1, 3}, dtype), -1.0);
        std::vector<double> one_above_other = as;
        for (double v : c.to_vector()) one_above_other.push_back(v);
        check_equal(concat({Var(a), Var(c)}, 0).value(), one_above_other, {3, 3});

        // stack axis 0: y[p, i, j] = part_p[i, j];  axis -1: y[i, j, p] = part_p[i, j].
        Tensor d = mul(a, -1.0);
        std::vector<double> ds = d.to_vector(), stacked_first = as, stacked_last;
        for (double v : ds) stacked_first.push_back(v);
        for (size_t e = 0; e < as.size(); ++e) {
            stacked_last.push_back(as[e]);
            stacked_last.push_back(ds[e]);
        }
        check_equal(stack({Var(a), Var(d)}, 0).value(), stacked_first, {2, 2, 3});
        check_equal(stack({Var(a), Var(d)}, -1).value(), stacked_last, {2, 3, 2});
    }
}

TEST_CASE("index_select picks table rows; indices of any shape") {
    for (Dtype dtype : kFloatDtypes) {
        const int64_t V = 4, D = 3;
        Tensor table = counting({V, D}, dtype);
        std::vector<double> ts = table.to_vector();
        std::vector<int64_t> rows = {3, 0, 2, 2, 1, 3};
        for (const Shape& indices_shape : {Shape{6}, Shape{2, 3}, Shape{3, 1, 2}}) {
            std::vector<double> expected;
            for (int64_t r : rows)
                for (int64_t d = 0; d < D; ++d) expected.push_back(ts[r * D + d]);
            Shape expected_shape = indices_shape;
            expected_shape.push_back(D);
            check_equal(index_select(Var(table), Tensor::from_indices(rows, indices_shape)).value(), expected,
                        expected_shape);
        }
    }
}

TEST_CASE("index_select backward adds the gradient of every repeated index into its row") {
    for (Dtype dtype : kFloatDtypes) {
        const int64_t V = 4, D = 3;
        std::vector<int64_t> rows = {0, 2, 2, 2, 3, 0};  // row 1 is never picked
        Var table = Var::parameter(counting({V, D}, dtype));
        Var y = index_select(table, Tensor::from_indices(rows, {3, 2}));  // [3, 2, D]
        Tensor dy = counting({3, 2, D}, dtype);
        y.backward(dy);

        std::vector<double> dys = dy.to_vector(), expected(static_cast<size_t>(V * D), 0.0);
        for (size_t i = 0; i < rows.size(); ++i)
            for (int64_t d = 0; d < D; ++d) expected[rows[i] * D + d] += dys[i * D + d];
        check_equal(table.grad(), expected, {V, D});
    }
}

TEST_CASE("shape ops and index_select reject bad input with a message naming the op") {
    Tensor x = counting({2, 3}, Dtype::Float64);
    Tensor table = counting({4, 3}, Dtype::Float64);
    CHECK_ERROR_MENTIONS(index_select(Var(table), Tensor::from_indices({0, 4}, {2})), "index_select");
    CHECK_ERROR_MENTIONS(index_select(Var(table), Tensor::from_indices({-1}, {1})), "index_select");
    CHECK_ERROR_MENTIONS(index_select(Var(table), x), "index_select");  // float indices
    CHECK_ERROR_MENTIONS(index_select(Var(table), Tensor()), "index_select");
    CHECK_ERROR_MENTIONS(concat({Var(x), Var(counting({2, 4}, Dtype::Float64))}, 0), "concat");
    CHECK_ERROR_MENTIONS(concat({Var(x), Var(counting({3}, Dtype::Float64))}, 0), "concat");
    CHECK_ERROR_MENTIONS(concat({Var(x), Var(counting({2, 3}, Dtype::Float32))}, 0), "concat");
    CHECK_ERROR_MENTIONS(concat(std::vector<Var>{}, 0), "concat");
    CHECK_ERROR_MENTIONS(stack({Var(x), Var(counting({3, 2}, Dtype::Float64))}, 0), "stack");
    CHECK_ERROR_MENTIONS(reshape(Var(x), {4, 2}), "reshape");
    CHECK_ERROR_MENTIONS(reshape(Var(x), {-2, -3}), "reshape");
    CHECK_ERROR_MENTIONS(permute(Var(x), {0, 0}), "permute");
    CHECK_ERROR_MENTIONS(permute(Var(x), {0}), "permute");
    CHECK_ERROR_MENTIONS(transpose(Var(x), 0, 2), "transpose");
    CHECK_ERROR_MENTIONS(slice(Var(x), 1, 2, 4), "slice");
    CHECK_ERROR_MENTIONS(slice(Var(x), 1, 2, 1), "slice");
}

}  // namespace nce::testing
