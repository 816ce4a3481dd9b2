#include "losses/matryoshka.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "losses/infonce.h"
#include "losses/infonce_blocks.h"
#include "losses/loss_common.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kMatryoshka = "matryoshka";

// "64,128,256": how a list is written in the parameter and in the messages.
template <typename T>
std::string list_text(const std::vector<T>& values) {
    return fmt::format("{}", fmt::join(values, ","));
}

// The entries of a comma-separated list, spaces around each trimmed; "" (or only spaces)
// gives none. An empty entry ("64,,128", "64,") is an error naming the parameter.
std::vector<std::string> split_entries(const std::string& text, const char* param, const char* example) {
    auto trim = [](const std::string& s) {
        size_t begin = s.find_first_not_of(' '), end = s.find_last_not_of(' ');
        return begin == std::string::npos ? std::string() : s.substr(begin, end - begin + 1);
    };
    if (trim(text).empty()) return {};
    std::vector<std::string> entries;
    size_t start = 0;
    while (true) {
        size_t comma = text.find(',', start);
        std::string entry = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        NCE_CHECK(!entry.empty(),
                  "{}: parameter {} has an empty entry in '{}'; separate the entries by single commas, e.g. {}", kMatryoshka,
                  param, text, example);
        entries.push_back(entry);
        if (comma == std::string::npos) return entries;
        start = comma + 1;
    }
}

// The prefix sizes to use: `given`, or the default rule when it is empty; checked against d.
std::vector<int64_t> prefix_sizes(const std::vector<int64_t>& given, int64_t d) {
    if (given.empty()) return matryoshka_default_dims(d);
    for (size_t k = 0; k < given.size(); ++k) {
        int64_t m = given[k];
        NCE_CHECK(m >= 1, "{}: parameter dims must hold prefix sizes >= 1, got {} in {}; remove it", kMatryoshka, m,
                  list_text(given));
        NCE_CHECK(m <= d,
                  "{}: parameter dims has {} > d = {} (q and p have {} columns); each prefix size must be at most d",
                  kMatryoshka, m, d, d);
        NCE_CHECK(k == 0 || m > given[k - 1],
                  "{}: parameter dims must be strictly ascending, got {} ({} after {}); list each prefix size once, "
                  "smallest first",
                  kMatryoshka, list_text(given), m, given[k - 1]);
    }
    NCE_CHECK(given.back() == d,
              "{}: parameter dims must end with d = {} (the whole embedding), got {}; add {} at the end", kMatryoshka, d,
              list_text(given), d);
    return given;
}

// One weight per prefix size: `given`, or all 1 when it is empty.
std::vector<double> prefix_weights(const std::vector<double>& given, const std::vector<int64_t>& dims,
                                   bool default_dims) {
    if (given.empty()) return std::vector<double>(dims.size(), 1.0);
    NCE_CHECK(given.size() == dims.size(),
              "{}: parameter weights has {} entries but dims has {} ({}{}); give one weight per prefix size", kMatryoshka,
              given.size(), dims.size(), list_text(dims), default_dims ? ", the default for this d" : "");
    for (size_t k = 0; k < given.size(); ++k)
        NCE_CHECK(given[k] > 0 && std::isfinite(given[k]),
                  "{}: parameter weights must be finite numbers > 0, got {} for prefix size {} (weights {})", kMatryoshka,
                  given[k], dims[k], list_text(given));
    return given;
}

// The rows of x's first m columns at unit length.    x: [N, d]
struct UnitRows {
    Tensor u;       // [N, m]   a_i / |a_i|,  a = x[:, :m]
    Tensor length;  // [N, 1]   |a_i|
};

// A row that is all zeros in its first m columns has no direction: an error naming the first
// such row. Checked at the smallest prefix only: a row nonzero there is nonzero in every
// longer one. One value is read on the host; the rows only when one of them is zero.
void check_nonzero_prefix_rows(const Tensor& x, int64_t m, const char* name) {
    Tensor zero_rows = 1.0 - step(max(abs(slice(x, 1, 0, m)), 1).values);  // [N], 1 where the prefix is all zeros
    if (max(zero_rows).item() == 0) return;
    std::vector<double> zero = zero_rows.to_vector();
    for (size_t i = 0; i < zero.size(); ++i)
        NCE_CHECK(zero[i] == 0,
                  "{}: row {} of {} is zero in its first {} columns (prefix size {}), so it cannot be re-normalised to "
                  "unit length; give every row a nonzero entry there, or leave {} out of dims",
                  kMatryoshka, i, name, m, m, m);
}

// Each row is first divided by its largest |entry|, so its squares neither overflow nor
// underflow (the direction is the same); rows checked nonzero by check_nonzero_prefix_rows.
UnitRows unit_prefix_rows(const Tensor& x, int64_t m) {
    Tensor a = slice(x, 1, 0, m);                    // [N, m]
    Tensor top = max(abs(a), 1, true).values;        // [N, 1]
    Tensor scaled = a / top;                               // [N, m], largest |entry| 1
    Tensor scaled_length = sqrt(sum(square(scaled), 1, true));  // [N, 1], in [1, sqrt(m)]
    return {scaled / scaled_length, top * scaled_length};
}

// dL/da from dL/du through u = a / |a|:  du/da = (I - u u^T) / |a|, symmetric, so
//   dL/da_i = (g_i - u_i (u_i·g_i)) / |a_i|       g = dL/du: [N, m]
// then the slice a = x[:, :m] puts it in columns [0, m) of an [N, d] gradient, 0 elsewhere.
Tensor through_unit_rows(const Tensor& g, const UnitRows& rows, int64_t d) {
    Tensor da = (g - rows.u * sum(rows.u * g, 1, true)) / rows.length;  // [N, m]
    int64_t N = da.size(0), m = da.size(1);
    if (m == d) return da;
    return concat({da, Tensor::zeros({N, d - m}, da.dtype(), da.device())}, 1);  // [N, d]
}

// One prefix's InfoNCE and its gradients at dy = 1.   u, v: [N, m], rows at unit length
struct PrefixInfonce {
    Tensor loss;        // L_m                float64 []  on u's device (the prefixes are summed in float64)
    Tensor du, dv;      // dL_m/du, dL_m/dv   [N, m], undefined without a gradient
    Tensor dloss_dtau;  // dL_m/dtau          float64 []
};

// On the CPU: infonce_sweep, infonce's fused row-blocked kernel. On another device: the same
// closed form with the whole logit matrix, one engine op each (as infonce_reference), so that
// every tensor stays there:
//   l = u v^T / tau  [N, N]    log P = log_softmax of each row    L_m = -(1/N) sum_i log P_ii
//   G = (P - I) / N    du = G v / tau    dv = G^T u / tau    dL_m/dtau = -(1/tau) sum_ij G_ij l_ij
PrefixInfonce prefix_infonce(const Tensor& u, const Tensor& v, double tau, bool with_gradient) {
    if (u.device() == Device::CPU) {
        InfonceSweep sweep = infonce_sweep(u, v, Tensor(), tau, with_gradient, LogitBlocking{});
        return {Tensor::scalar(sweep.loss, Dtype::Float64), sweep.dq, sweep.dp,
                Tensor::scalar(sweep.dloss_dtau, Dtype::Float64)};
    }
    int64_t N = u.size(0);
    Tensor I = identity_like(N, u);                                             // [N, N]
    Tensor logits = matmul(u, v, Transpose::Second) / tau;                      // l  [N, N]
    Tensor log_probabilities = log_softmax(logits);                             // log P  [N, N]
    Tensor positive_log_probabilities = sum(log_probabilities * I, 1);          // log P_ii  [N]
    PrefixInfonce prefix;
    prefix.loss = -sum(positive_log_probabilities.to(Dtype::Float64)) / static_cast<double>(N);
    if (!with_gradient) return prefix;
    Tensor G = (exp(log_probabilities) - I) / static_cast<double>(N);          // [N, N]
    prefix.du = matmul(G, v) / tau;                                             // [N, m]
    prefix.dv = matmul(G, u, Transpose::First) / tau;                           // [N, m]
    prefix.dloss_dtau = -sum(G * logits).to(Dtype::Float64) / tau;              // []
    return prefix;
}

// dL/dlog_tau = tau · dL/dtau (0 while tau is clamped at 1e-4), in log_tau's shape, dtype and
// device: log_tau_gradient (loss_common.h) for a dloss_dtau that stays a float64 [] tensor.
Tensor log_tau_gradient_from(const Temperature& temperature, const Tensor& dloss_dtau, const Var& log_tau) {
    const Tensor& like = log_tau.value();
    if (temperature.clamped) return Tensor::zeros(like.shape(), like.dtype(), like.device());
    return (dloss_dtau * temperature.tau).to(like.dtype()).reshape(like.shape()).to(like.device());
}

}  // namespace

std::vector<int64_t> matryoshka_default_dims(int64_t d) {
    std::vector<int64_t> dims;
    for (int64_t divisor : {8, 4, 2, 1})
        if (d % divisor == 0 && d / divisor >= 1) dims.push_back(d / divisor);
    return dims;
}

std::vector<int64_t> parse_matryoshka_dims(const std::string& text) {
    std::vector<int64_t> dims;
    for (const std::string& entry : split_entries(text, "dims", "64,128,256")) {
        bool digits = std::all_of(entry.begin(), entry.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
        errno = 0;
        long long value = digits ? std::strtoll(entry.c_str(), nullptr, 10) : 0;
        NCE_CHECK(digits && errno == 0,
                  "{}: parameter dims must be comma-separated whole numbers (prefix sizes, e.g. 64,128,256), got '{}' "
                  "in '{}'",
                  kMatryoshka, entry, text);
        dims.push_back(static_cast<int64_t>(value));
    }
    return dims;
}

std::vector<double> parse_matryoshka_weights(const std::string& text) {
    std::vector<double> weights;
    for (const std::string& entry : split_entries(text, "weights", "1,1,2")) {
        char* end = nullptr;
        errno = 0;
        double value = std::strtod(entry.c_str(), &end);
        NCE_CHECK(end == entry.c_str() + entry.size() && errno == 0 && std::isfinite(value),
                  "{}: parameter weights must be comma-separated finite numbers (e.g. 1,1,2), got '{}' in '{}'", kMatryoshka,
                  entry, text);
        weights.push_back(value);
    }
    return weights;
}

// Matryoshka InfoNCE.    q, p: [N, d]    for each prefix size m (columns [0, m)):
//   a = q[:, :m], b = p[:, :m]                     [N, m]
//   u_i = a_i / |a_i|,  v_i = b_i / |b_i|          each row at unit length
//   L_m = infonce(u, v) = (1/N) sum_i ( lse_j l_ij - l_ii ),   l = u v^T / tau   [N, N]
//   L = sum_m w_m L_m / W,   W = sum_m w_m
//
// Backward, prefix by prefix, each scaled by its share w_m / W:
//   infonce's closed form (docs/derivations/infonce.md):  G = (P - Y) / N      [N, N]
//     dL_m/du = G v / tau    dL_m/dv = G^T u / tau    dL_m/dtau = -(1/tau) sum_ij G_ij l_ij
//   through the re-normalisation, d(a/|a|)/da = (I - u u^T) / |a|:
//     dL_m/da_i = (g_i - u_i (u_i·g_i)) / |a_i|,   g = dL_m/du    (likewise b from dL_m/dv)
//   through the slice: dL_m/dq = [ dL_m/da | 0 ]   (columns m..d-1 do not reach L_m)
//   dL/dq = sum_m (w_m / W) dL_m/dq    dL/dp likewise
//   dL/dlog_tau = tau · sum_m (w_m / W) dL_m/dtau   (0 while tau is clamped at 1e-4)
// prefix_infonce (infonce's fused kernel on the CPU, its whole-matrix form elsewhere) gives
// L_m and its gradients at dy = 1 during the forward; the re-normalisation and the slice are
// applied here, and the node's backward multiplies the sums by dy, as infonce's does.
Var matryoshka(const Var& q, const Var& p, const Var& log_tau, double tau, const std::vector<int64_t>& dims,
               const std::vector<double>& weights) {
    check_infonce_inputs(q, p, Var(), tau, kMatryoshka);
    Temperature temperature = resolve_temperature(log_tau, tau, kMatryoshka);
    int64_t d = q.size(1);
    NCE_CHECK(d >= 1, "{}: q and p {} have no columns; they need d >= 1 (every prefix has at least one column)", kMatryoshka,
              shape_string(q.shape()));
    std::vector<int64_t> sizes = prefix_sizes(dims, d);
    std::vector<double> shares = prefix_weights(weights, sizes, dims.empty());
    double total_weight = 0;
    for (double w : shares) total_weight += w;
    for (double& w : shares) w /= total_weight;  // w_m / W

    check_nonzero_prefix_rows(q.value(), sizes.front(), "q");
    check_nonzero_prefix_rows(p.value(), sizes.front(), "p");

    std::vector<Var> inputs{q, p};
    if (log_tau.defined()) inputs.push_back(log_tau);
    bool with_gradient = any_needs_gradient(inputs);
    // L and its gradients at dy = 1, summed over the prefixes, on the inputs' device.
    Device device = q.value().device();
    Tensor total_loss = Tensor::zeros({}, Dtype::Float64, device);        // []
    Tensor total_dloss_dtau = Tensor::zeros({}, Dtype::Float64, device);  // []
    InfonceSweep total;  // its dq, dp: the gradients' sums, for scaled_gradients
    if (with_gradient) {
        total.dq = zeros_like(q.value());  // [N, d]
        total.dp = zeros_like(p.value());  // [N, d]
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
        int64_t m = sizes[k];
        double share = shares[k];
        UnitRows a = unit_prefix_rows(q.value(), m), b = unit_prefix_rows(p.value(), m);
        PrefixInfonce prefix = prefix_infonce(a.u, b.u, temperature.tau, with_gradient);
        total_loss = total_loss + prefix.loss * share;
        if (!with_gradient) continue;
        total_dloss_dtau = total_dloss_dtau + prefix.dloss_dtau * share;
        add_inplace(total.dq, through_unit_rows(prefix.du, a, d) * share);
        add_inplace(total.dp, through_unit_rows(prefix.dv, b, d) * share);
    }
    Tensor loss = total_loss.to(q.dtype());
    Tensor dloss_dlog_tau = with_gradient && temperature.learnable
                                ? log_tau_gradient_from(temperature, total_dloss_dtau, log_tau)
                                : Tensor();
    return Var::from_op(kMatryoshka, std::move(loss), inputs, scaled_gradients(total, dloss_dlog_tau));
}

LossDefinition matryoshka_definition() {
    LossDefinition loss;
    loss.name = kMatryoshka;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    // dims and weights are lists whose checks need d: free text here, read by the loss.
    loss.params = {{"tau", "0.05", ParamRule::Positive, {}},
                   {"dims", "", ParamRule::Text, {}},
                   {"weights", "", ParamRule::Text, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return matryoshka(arguments.input("q"), arguments.input("p"), arguments.optional("log_tau"),
                          arguments.number("tau"), parse_matryoshka_dims(arguments.text("dims")),
                          parse_matryoshka_weights(arguments.text("weights")));
    };
    // rows pairs whose entries have |x| in [0.25, 1.25) and a random sign, each row then scaled
    // by a factor in [0.5, 2): no row or prefix is near zero (the re-normalisation's corner,
    // and for a prefix of one column a sign flip), and the lengths differ, so the
    // re-normalisation is at work. A learnable tau of 0.1. The default dims apply (dim = 4:
    // 1, 2, 4; dim = 5: 5).
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        auto draw = [&] {
            Tensor magnitude = generator.uniform({rows, dim}, Dtype::Float64, 0.25, 1.25);
            Tensor sign = generator.bernoulli({rows, dim}, Dtype::Float64, 0.5) * 2.0 - 1.0;
            return magnitude * sign * generator.uniform({rows, 1}, Dtype::Float64, 0.5, 2.0);
        };
        Tensor q = draw(), p = draw();
        return std::map<std::string, Tensor>{
            {"q", q}, {"p", p}, {"log_tau", Tensor::scalar(std::log(0.1), Dtype::Float64)}};
    };
    // The page's example: N = 2 pairs of dimension 4, prefixes 2 and 4 weighted 1 and 3, a
    // learnable tau of 0.5. No row has unit length, in its prefix or whole, so every
    // re-normalisation shows.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{0.3, 0.4, 1.2, 0.0}, {0.0, 2.0, 1.5, 0.0}})},
                          {"p", matrix({{1.6, 1.2, 0.0, 1.5}, {0.5, 0.0, 0.0, 1.2}})},
                          {"log_tau", Tensor::scalar(std::log(0.5), Dtype::Float64)}};
        example.params = {{"dims", "2,4"}, {"weights", "1,3"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            double tau = std::exp(arguments.input("log_tau").value().item());
            std::vector<int64_t> dims = parse_matryoshka_dims(arguments.text("dims"));
            std::vector<double> weights = parse_matryoshka_weights(arguments.text("weights"));
            int64_t N = q.size(0), d = q.size(1);
            double W = 0;
            for (double w : weights) W += w;
            std::vector<DerivationStep> steps{{"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)}};
            Tensor L = Tensor::scalar(0.0, Dtype::Float64), dq = zeros_like(q), dp = zeros_like(p);
            Tensor dlog_tau = Tensor::scalar(0.0, Dtype::Float64);
            for (size_t k = 0; k < dims.size(); ++k) {
                int64_t m = dims[k];
                std::string s = std::to_string(m);
                Tensor a = slice(q, 1, 0, m), b = slice(p, 1, 0, m);                      // [N, m]
                Tensor a_length = sqrt(sum(a * a, 1, true)), b_length = sqrt(sum(b * b, 1, true));  // [N, 1]
                Tensor u = a / a_length, v = b / b_length;                                // [N, m]
                Tensor l = matmul(u, v, Transpose::Second) / tau;                         // [N, N]
                Tensor L_m = mean(log(sum(exp(l), 1)) - sum(l * identity(N), 1));          // []
                Tensor G = (softmax(l) - identity(N)) * (weights[k] / W / N);              // [N, N]
                Tensor du = matmul(G, v) / tau, dv = matmul(G, u, Transpose::First) / tau;  // [N, m]
                Tensor zeros = Tensor::zeros({N, d - m}, Dtype::Float64);
                Tensor dq_m = concat({(du - u * sum(u * du, 1, true)) / a_length, zeros}, 1);  // [N, d]
                Tensor dp_m = concat({(dv - v * sum(v * dv, 1, true)) / b_length, zeros}, 1);  // [N, d]
                std::string share = fmt::format("{:g}", weights[k] / W);
                std::string rest = m < d ? ", 0 in columns " + s + " to " + std::to_string(d - 1) : "";
                steps.push_back({"u" + s, "q_i[:" + s + "] / |q_i[:" + s + "]|, q's first " + s +
                                     " columns, each row at unit length", u});
                steps.push_back({"v" + s, "p_i[:" + s + "] / |p_i[:" + s + "]|", v});
                steps.push_back({"l" + s, "u" + s + " v" + s + "^T / tau", l});
                steps.push_back({"L" + s, "infonce(u" + s + ", v" + s + ") = (1/N) sum_i (lse_j l_ij - l_ii)", L_m});
                steps.push_back({"G" + s, "(w_" + s + " / W) (P - Y) / N, w_" + s + " / W = " + share +
                                     ", P = softmax of each row of l" + s, G});
                steps.push_back({"du" + s, "G" + s + " v" + s + " / tau", du});
                steps.push_back({"dv" + s, "G" + s + "^T u" + s + " / tau", dv});
                steps.push_back({"dq" + s, "(du" + s + "_i - u" + s + "_i (u" + s + "_i.du" + s + "_i)) / |q_i[:" + s +
                                     "]|" + rest, dq_m});
                steps.push_back({"dp" + s, "(dv" + s + "_i - v" + s + "_i (v" + s + "_i.dv" + s + "_i)) / |p_i[:" + s +
                                     "]|" + rest, dp_m});
                L = L + L_m * (weights[k] / W);
                dq = dq + dq_m;
                dp = dp + dp_m;
                dlog_tau = dlog_tau - sum(G * l);
            }
            steps.push_back({"L", "sum_m w_m L_m / W", L});
            steps.push_back({"dq", "sum_m dq_m", dq});
            steps.push_back({"dp", "sum_m dp_m", dp});
            steps.push_back({"dlog_tau", "tau dL/dtau = -sum_m sum_ij G_m,ij l_m,ij", dlog_tau});
            return steps;
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
