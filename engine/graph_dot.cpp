#include "engine/graph_dot.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <set>

namespace nce {
namespace {

// ||t||, the square root of the sum of squared entries, in double.
double norm(const Tensor& tensor) {
    double sum_of_squares = 0;
    for (double entry : tensor.to_vector()) sum_of_squares += entry * entry;
    return std::sqrt(sum_of_squares);
}

// An entry as printed: -0 shows as 0 (adding +0.0 turns -0.0 into 0.0).
double printable(double entry) { return entry + 0.0; }

// "value = 2.303" for one entry, "value [0.6, 0.8]" for up to four, else "value norm 1.732".
std::string describe(const Tensor& tensor, const char* what) {
    if (tensor.numel() == 1) return fmt::format("{} = {:.6g}", what, printable(tensor.to_vector()[0]));
    if (tensor.numel() <= 4) {
        std::vector<std::string> entries;
        for (double entry : tensor.to_vector()) entries.push_back(fmt::format("{:.4g}", printable(entry)));
        return fmt::format("{} [{}]", what, fmt::join(entries, ", "));
    }
    return fmt::format("{} norm {:.4g}", what, norm(tensor));
}

// What the picture knows of one node, found on the walk.
struct Seen {
    Shape shape;   // the node's output shape: the shape its first reader recorded for it
    Dtype dtype = Dtype::Float32;
};

class DotWriter {
public:
    DotWriter(const Var& output, const DotOptions& options) : output_(output), options_(options) {
        for (const auto& [name, var] : options.names)
            if (var.node() && names_.emplace(var.node().get(), &var).second) labels_[var.node().get()] = name;
    }

    std::string write() {
        text_ = "digraph nce {\n";
        text_ += "  // nce autograd graph: edges run from an op's inputs to the op; the output is drawn last\n";
        text_ += "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12";
        if (!options_.title.empty()) text_ += fmt::format(", labelloc=t, label=\"{}\"", dot_escape(options_.title));
        text_ += "];\n";
        text_ += "  node [fontname=\"Helvetica\", fontsize=11];\n";
        text_ += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n";
        if (!output_.node()) {
            // Nothing upstream needs a gradient: no graph was recorded, only the value.
            std::vector<std::string> lines{"constant (no graph recorded)", shape_and_dtype(output_.shape(), output_.dtype())};
            if (options_.with_values) lines.push_back(describe(output_.value(), "value"));
            add_node("ellipse", "style=dashed, peripheries=2", lines);
        } else {
            for (const Node* node : walk()) draw(node);
        }
        text_ += "}\n";
        return text_;
    }

private:
    // Every node reachable from the output, each after all of its inputs (depth-first,
    // inputs in order); records each node's shape and dtype as its reader saw them.
    std::vector<const Node*> walk() {
        const Node* root = output_.node().get();
        seen_[root] = {output_.shape(), output_.dtype()};
        std::vector<const Node*> order;
        std::vector<std::pair<const Node*, size_t>> stack{{root, 0}};
        while (!stack.empty()) {
            auto& [node, next_input] = stack.back();
            if (next_input < node->next.size()) {
                size_t i = next_input++;
                const Node* input = node->next[i].get();
                if (input && !seen_.count(input)) {
                    seen_[input] = {node->input_shapes[i], node->input_dtypes[i]};
                    stack.emplace_back(input, 0);
                }
                continue;
            }
            order.push_back(node);
            stack.pop_back();
        }
        return order;
    }

    static std::string shape_and_dtype(const Shape& shape, Dtype dtype) {
        return fmt::format("{} {}", shape_string(shape), dtype_name(dtype));
    }

    // The value a node shows: kept by the node, or the output's, or a named Var's.
    Tensor value_of(const Node* node) const {
        if (node->value.defined()) return node->value;
        if (node == output_.node().get()) return output_.value();
        if (auto it = names_.find(node); it != names_.end()) return it->second->value();
        return Tensor();
    }

    static Tensor grad_of(const Node* node) { return node->leaf_grad ? *node->leaf_grad : node->grad; }

    void draw(const Node* node) {
        const Seen& seen = seen_.at(node);
        bool is_output = node == output_.node().get();
        auto label = labels_.find(node);
        std::vector<std::string> lines;
        if (node->leaf_grad) {
            lines.push_back(label != labels_.end() ? label->second : "leaf");
            lines.push_back("parameter, requires_grad");
        } else {
            if (label != labels_.end()) lines.push_back(label->second);
            lines.push_back(node->op);
        }
        lines.push_back(shape_and_dtype(seen.shape, seen.dtype));
        if (options_.with_values) {
            if (Tensor value = value_of(node); value.defined()) lines.push_back(describe(value, "value"));
            if (Tensor grad = grad_of(node); grad.defined()) lines.push_back(describe(grad, "grad"));
        }
        std::string attributes = node->leaf_grad ? "style=filled, fillcolor=\"#dbe9f6\"" : "style=filled, fillcolor=\"#eeeeee\"";
        if (is_output) attributes += ", peripheries=2";

        // Constant inputs (no node, no gradient) are drawn once per use, just before the op.
        std::vector<std::string> inputs;
        for (size_t i = 0; i < node->next.size(); ++i) {
            if (node->next[i])
                inputs.push_back(ids_.at(node->next[i].get()));
            else
                inputs.push_back(draw_constant(node, i));
        }
        std::string id = add_node(node->leaf_grad ? "ellipse" : "box", attributes, lines);
        ids_[node] = id;
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (inputs.size() == 1)
                text_ += fmt::format("  {} -> {};\n", inputs[i], id);
            else
                text_ += fmt::format("  {} -> {} [label=\"{}\"];\n", inputs[i], id, i);
        }
    }

    // Input i of `node`, which needs no gradient: named when the graph kept its value and a
    // named Var holds that same tensor.
    std::string draw_constant(const Node* node, size_t i) {
        Tensor value = i < node->constant_inputs.size() ? node->constant_inputs[i] : Tensor();
        std::vector<std::string> lines;
        if (value.defined()) {
            for (const auto& [name, var] : options_.names) {
                if (!var.node() && var.defined() && var.value().same_storage(value) && var.shape() == value.shape()) {
                    lines.push_back(name);
                    break;
                }
            }
        }
        lines.push_back("constant, no gradient");
        lines.push_back(shape_and_dtype(node->input_shapes[i], node->input_dtypes[i]));
        if (options_.with_values && value.defined()) lines.push_back(describe(value, "value"));
        return add_node("ellipse", "style=dashed", lines);
    }

    // Writes one node statement and returns its id (n0, n1, ... in the order written).
    std::string add_node(const char* shape, const std::string& attributes, const std::vector<std::string>& lines) {
        std::string id = fmt::format("n{}", next_id_++);
        std::vector<std::string> escaped;
        for (const std::string& line : lines) escaped.push_back(dot_escape(line));
        text_ += fmt::format("  {} [shape={}, {}, label=\"{}\"];\n", id, shape, attributes, fmt::join(escaped, "\\n"));
        return id;
    }

    const Var& output_;
    const DotOptions& options_;
    std::map<const Node*, const Var*> names_;        // the first named Var of each node
    std::map<const Node*, std::string> labels_;
    std::map<const Node*, Seen> seen_;
    std::map<const Node*, std::string> ids_;
    std::string text_;
    int next_id_ = 0;
};

}  // namespace

std::string dot_escape(std::string_view text) {
    std::string escaped;
    for (char c : text) {
        if (c == '"' || c == '\\')
            escaped += {'\\', c};
        else if (c == '\n')
            escaped += "\\n";
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            escaped += ' ';
        else
            escaped += c;
    }
    return escaped;
}

std::string to_dot(const Var& output, const DotOptions& options) {
    return DotWriter(output, options).write();
}

}  // namespace nce
