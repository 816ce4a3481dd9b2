// op_reference OP IN_DIR OUT_DIR [key=value]...: one engine op run in plain C++, for the
// Python tests' bit-for-bit comparison (python/tests/test_ops.py).
//
// Reads the op's float inputs IN_DIR/a.npy, b.npy, c.npy (those the op takes) as leaf Vars,
// its constant tensors IN_DIR/indices.npy, mask.npy, targets.npy, and the output gradient
// IN_DIR/dy.npy (ones of the output's shape when absent); runs the op, back-propagates dy and
// writes OUT_DIR/value.npy and OUT_DIR/grad_<input>.npy for every float input. Parameters
// come as key=value (axis=1, keepdim=1, transpose=second, ...). Errors: one line, exit 1.
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/nce.h"

namespace {

using namespace nce;
namespace fs = std::filesystem;

struct OpCall {
    std::map<std::string, Var> vars;        // a, b, c
    std::map<std::string, Tensor> tensors;  // indices, mask, targets
    std::map<std::string, std::string> params;

    const Var& var(const std::string& name) const {
        auto it = vars.find(name);
        NCE_CHECK(it != vars.end(), "op_reference: input {}.npy is missing", name);
        return it->second;
    }
    Tensor tensor(const std::string& name) const {
        auto it = tensors.find(name);
        return it == tensors.end() ? Tensor() : it->second;
    }
    bool has(const std::string& name) const { return params.count(name) > 0; }
    const std::string& text(const std::string& name) const {
        auto it = params.find(name);
        NCE_CHECK(it != params.end(), "op_reference: parameter {} is missing", name);
        return it->second;
    }
    double number(const std::string& name) const { return std::stod(text(name)); }
    int64_t integer(const std::string& name) const { return std::stoll(text(name)); }
    std::vector<int64_t> integers(const std::string& name) const {
        std::vector<int64_t> values;
        std::string list = text(name);
        for (size_t start = 0; start <= list.size();) {
            size_t comma = list.find(',', start);
            if (comma == std::string::npos) comma = list.size();
            if (comma > start) values.push_back(std::stoll(list.substr(start, comma - start)));
            start = comma + 1;
        }
        return values;
    }
    bool flag(const std::string& name) const { return has(name) && integer(name) != 0; }
};

Transpose transpose_of(const std::string& name) {
    if (name == "first") return Transpose::First;
    if (name == "second") return Transpose::Second;
    if (name == "both") return Transpose::Both;
    return Transpose::None;
}

// Reductions: no axis parameter reduces everything.
template <typename Whole, typename Along>
Var reduction(const OpCall& call, Whole whole, Along along) {
    if (!call.has("axis")) return whole(call.var("a"));
    return along(call.var("a"), call.integer("axis"), call.flag("keepdim"));
}

std::vector<Var> parts_of(const OpCall& call) {
    std::vector<Var> parts;
    for (const char* name : {"a", "b", "c"})
        if (call.vars.count(name)) parts.push_back(call.vars.at(name));
    return parts;
}

using OpFunction = std::function<Var(const OpCall&)>;

const std::map<std::string, OpFunction>& op_table() {
    static const std::map<std::string, OpFunction> table = {
        {"matmul", [](const OpCall& c) { return matmul(c.var("a"), c.var("b"), transpose_of(c.has("transpose") ? c.text("transpose") : "none")); }},
        {"affine", [](const OpCall& c) { return affine(c.var("a"), c.var("b"), c.var("c")); }},
        {"add", [](const OpCall& c) { return add(c.var("a"), c.var("b")); }},
        {"sub", [](const OpCall& c) { return sub(c.var("a"), c.var("b")); }},
        {"mul", [](const OpCall& c) { return mul(c.var("a"), c.var("b")); }},
        {"div", [](const OpCall& c) { return div(c.var("a"), c.var("b")); }},
        {"neg", [](const OpCall& c) { return neg(c.var("a")); }},
        {"add_scalar", [](const OpCall& c) { return add_scalar(c.var("a"), c.number("s")); }},
        {"mul_scalar", [](const OpCall& c) { return mul_scalar(c.var("a"), c.number("s")); }},
        {"exp", [](const OpCall& c) { return exp(c.var("a")); }},
        {"log", [](const OpCall& c) { return log(c.var("a")); }},
        {"sqrt", [](const OpCall& c) { return sqrt(c.var("a")); }},
        {"tanh", [](const OpCall& c) { return tanh(c.var("a")); }},
        {"sigmoid", [](const OpCall& c) { return sigmoid(c.var("a")); }},
        {"relu", [](const OpCall& c) { return relu(c.var("a")); }},
        {"pow", [](const OpCall& c) {
             return c.has("exponent") ? pow(c.var("a"), c.number("exponent")) : pow(c.var("a"), c.var("b"));
         }},
        {"gelu", [](const OpCall& c) {
             bool tanh_form = c.has("approximation") && c.text("approximation") == "tanh";
             return gelu(c.var("a"), tanh_form ? GeluApproximation::Tanh : GeluApproximation::Erf);
         }},
        {"sum", [](const OpCall& c) {
             return reduction(c, [](const Var& v) { return sum(v); }, [](const Var& v, int64_t a, bool k) { return sum(v, a, k); });
         }},
        {"mean", [](const OpCall& c) {
             return reduction(c, [](const Var& v) { return mean(v); }, [](const Var& v, int64_t a, bool k) { return mean(v, a, k); });
         }},
        {"max", [](const OpCall& c) {
             return reduction(c, [](const Var& v) { return max(v); }, [](const Var& v, int64_t a, bool k) { return max(v, a, k); });
         }},
        {"reshape", [](const OpCall& c) { return reshape(c.var("a"), c.integers("shape")); }},
        {"permute", [](const OpCall& c) { return permute(c.var("a"), c.integers("axes")); }},
        {"transpose", [](const OpCall& c) { return transpose(c.var("a"), c.integer("axis_a"), c.integer("axis_b")); }},
        {"slice", [](const OpCall& c) { return slice(c.var("a"), c.integer("axis"), c.integer("start"), c.integer("end")); }},
        {"concat", [](const OpCall& c) { return concat(parts_of(c), c.integer("axis")); }},
        {"stack", [](const OpCall& c) { return stack(parts_of(c), c.integer("axis")); }},
        {"index_select", [](const OpCall& c) { return index_select(c.var("a"), c.tensor("indices")); }},
        {"softmax", [](const OpCall& c) { return softmax(c.var("a")); }},
        {"log_softmax", [](const OpCall& c) { return log_softmax(c.var("a")); }},
        {"cross_entropy", [](const OpCall& c) { return cross_entropy(c.var("a"), c.tensor("targets")); }},
        {"layer_norm", [](const OpCall& c) {
             return layer_norm(c.var("a"), c.var("b"), c.var("c"), c.has("eps") ? c.number("eps") : 1e-5);
         }},
        {"dropout", [](const OpCall& c) {
             Generator generator(static_cast<uint64_t>(c.integer("seed")));
             return dropout(c.var("a"), c.number("p"), generator, true);
         }},
        {"relu_dropout", [](const OpCall& c) {
             Generator generator(static_cast<uint64_t>(c.integer("seed")));
             return relu_dropout(c.var("a"), c.number("p"), generator, true);
         }},
        {"masked_mean_pool", [](const OpCall& c) { return masked_mean_pool(c.var("a"), c.tensor("mask")); }},
        {"l2_normalize", [](const OpCall& c) { return l2_normalize(c.var("a"), c.has("eps") ? c.number("eps") : 1e-12); }},
        {"scaled_dot_product_attention", [](const OpCall& c) {
             return scaled_dot_product_attention(c.var("a"), c.var("b"), c.var("c"), c.tensor("mask"));
         }},
        {"packed_attention", [](const OpCall& c) {
             return packed_attention(c.var("a"), c.tensor("mask"), c.integer("heads"), 0.0, nullptr);
         }},
    };
    return table;
}

int run(int argc, char** argv) {
    NCE_CHECK(argc >= 4, "usage: op_reference OP IN_DIR OUT_DIR [key=value]...");
    std::string op = argv[1];
    fs::path in_dir = argv[2], out_dir = argv[3];
    auto entry = op_table().find(op);
    NCE_CHECK(entry != op_table().end(), "op_reference: unknown op '{}'", op);
    OpCall call;
    for (int i = 4; i < argc; ++i) {
        std::string setting = argv[i];
        size_t equals = setting.find('=');
        NCE_CHECK(equals != std::string::npos, "op_reference: expected key=value, got '{}'", setting);
        call.params[setting.substr(0, equals)] = setting.substr(equals + 1);
    }
    for (const char* name : {"a", "b", "c"})
        if (fs::exists(in_dir / (std::string(name) + ".npy")))
            call.vars.emplace(name, Var::parameter(read_npy((in_dir / (std::string(name) + ".npy")).string())));
    for (const char* name : {"indices", "mask", "targets"})
        if (fs::exists(in_dir / (std::string(name) + ".npy")))
            call.tensors[name] = read_npy((in_dir / (std::string(name) + ".npy")).string());

    Var output = entry->second(call);
    fs::path dy_file = in_dir / "dy.npy";
    Tensor dy = fs::exists(dy_file) ? read_npy(dy_file.string())
                                    : Tensor::full(output.shape(), 1.0, output.dtype());
    output.backward(dy);
    fs::create_directories(out_dir);
    write_npy((out_dir / "value.npy").string(), output.value());
    for (const auto& [name, var] : call.vars)
        if (var.grad().defined()) write_npy((out_dir / ("grad_" + name + ".npy")).string(), var.grad());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        fmt::print(stderr, "{}\n", error.what());
        return 1;
    }
}
