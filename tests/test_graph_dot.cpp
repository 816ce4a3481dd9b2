// to_dot: the autograd graph as Graphviz DOT (engine/graph_dot.h): one statement per node
// with its op, shape and dtype, edges from inputs to ops, the same text for the same graph,
// names escaped, and with values the norms the graph kept under KeepValuesGuard.
#include <algorithm>
#include <regex>

#include "tests/test_helpers.h"

using namespace nce;

namespace {

// Lines of `text` that declare a node ("  n3 [shape=...") and that draw an edge ("a -> b").
int count_nodes(const std::string& text) {
    static const std::regex node(R"(^  n\d+ \[shape=)");
    int count = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) count += std::regex_search(line, node) ? 1 : 0;
    return count;
}

int count_edges(const std::string& text) {
    int count = 0;
    for (size_t at = text.find(" -> "); at != std::string::npos; at = text.find(" -> ", at + 1)) ++count;
    return count;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// x [3, 2] (a constant), W [4, 2] and b [4] parameters:
//   h = matmul(x, W^T) [3, 4]; y = h + b [3, 4]; L = sum(y * y) []
struct SmallGraph {
    Var x{Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, Dtype::Float64)};
    Var W = Var::parameter(Tensor::from_vector({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, {4, 2}, Dtype::Float64));
    Var b = Var::parameter(Tensor::from_vector({0.5, -0.5, 1.0, -1.0}, {4}, Dtype::Float64));
    Var y, loss;
    SmallGraph() {
        y = matmul(x, W, Transpose::Second) + b;
        loss = sum(y * y);
    }
};

}  // namespace

TEST_CASE("to_dot: one node per op and leaf, a constant per use, labels with op, shape and dtype") {
    SmallGraph graph;
    std::string dot = to_dot(graph.loss);
    // Nodes: constant x, leaf W, matmul, leaf b, add, mul, sum; edges: 2 + 2 + 2 + 1.
    CHECK(count_nodes(dot) == 7);
    CHECK(count_edges(dot) == 7);
    CHECK(dot.rfind("digraph nce {\n", 0) == 0);
    CHECK(dot.substr(dot.size() - 2) == "}\n");
    CHECK(contains(dot, R"(label="matmul\n[3, 4] float64")"));
    CHECK(contains(dot, R"(label="add\n[3, 4] float64")"));
    CHECK(contains(dot, R"(label="mul\n[3, 4] float64")"));
    CHECK(contains(dot, R"(peripheries=2, label="sum\n[] float64")"));
    CHECK(contains(dot, R"(label="leaf\nparameter, requires_grad\n[4, 2] float64")"));
    CHECK(contains(dot, R"(label="leaf\nparameter, requires_grad\n[4] float64")"));
    CHECK(contains(dot, R"(label="constant, no gradient\n[3, 2] float64")"));
    // Inputs before the ops that read them, the output last; y used twice gives two edges.
    // Order: W, x (matmul's constant, just before it), matmul, b, add, mul, sum.
    CHECK(contains(dot, "  n0 [shape=ellipse, style=filled"));
    CHECK(contains(dot, "  n1 [shape=ellipse, style=dashed"));
    CHECK(contains(dot, "  n1 -> n2 [label=\"0\"];\n  n0 -> n2 [label=\"1\"];"));
    CHECK(contains(dot, "  n4 -> n5 [label=\"0\"];\n  n4 -> n5 [label=\"1\"];"));
    CHECK(contains(dot, "  n6 [shape=box"));
    CHECK(contains(dot, "  n5 -> n6;\n}\n"));
    CHECK(!contains(dot, "value"));                                      // no values unless asked
}

TEST_CASE("to_dot: the same graph gives the same text, and a rebuilt graph too") {
    SmallGraph first, second;
    std::string dot = to_dot(first.loss);
    CHECK(to_dot(first.loss) == dot);
    CHECK(to_dot(second.loss) == dot);
    DotOptions named{.with_values = true, .names = {{"W", first.W}, {"b", first.b}}, .title = "small"};
    CHECK(to_dot(first.loss, named) == to_dot(first.loss, named));
}

TEST_CASE("to_dot: names and title are escaped for DOT") {
    SmallGraph graph;
    DotOptions options;
    options.names = {{"W \"weights\"\\", graph.W}, {"b\nbias", graph.b}, {"y", graph.y}};
    options.title = "a \"quoted\" title\twith a tab";
    std::string dot = to_dot(graph.loss, options);
    CHECK(contains(dot, R"(label="W \"weights\"\\\nparameter, requires_grad\n[4, 2] float64")"));
    CHECK(contains(dot, R"(label="b\nbias\nparameter, requires_grad\n[4] float64")"));
    CHECK(contains(dot, R"(label="y\nadd\n[3, 4] float64")"));
    CHECK(contains(dot, R"(label="a \"quoted\" title with a tab")"));
    CHECK(dot_escape("a\"b\\c\nd\re") == R"(a\"b\\c\nd e)");
    // No raw line break or unescaped quote inside any label.
    std::istringstream lines(dot);
    for (std::string line; std::getline(lines, line);)
        CHECK(std::count(line.begin(), line.end(), '"') % 2 == 0);
}

TEST_CASE("to_dot: with values, the norms of values and gradients the graph kept") {
    Var a = Var::parameter(Tensor::from_vector({3, 4}, {2}, Dtype::Float64));
    Var loss;
    {
        KeepValuesGuard keep;
        loss = sum(a * 2.0);  // mul_scalar [2] = [6, 8], then sum = 14
    }
    loss.backward();
    std::string dot = to_dot(loss, {.with_values = true, .names = {{"a", a}}});
    CHECK(contains(dot, R"(label="a\nparameter, requires_grad\n[2] float64\nvalue [3, 4]\ngrad [2, 2]")"));
    CHECK(contains(dot, R"(label="mul_scalar\n[2] float64\nvalue [6, 8]\ngrad [1, 1]")"));
    CHECK(contains(dot, R"(label="sum\n[] float64\nvalue = 14\ngrad = 1")"));

    // A bigger tensor shows its norm: ||[1..6]|| = sqrt(91) = 9.539.
    Var big = Var::parameter(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {6}, Dtype::Float64));
    Var total = sum(big);
    total.backward();
    std::string plain = to_dot(total, {.with_values = true, .names = {{"big", big}}});
    CHECK(contains(plain, R"(value norm 9.539\ngrad norm 2.449")"));
    // Built without the guard, the op keeps nothing but the output's own value shows.
    CHECK(contains(plain, R"(label="sum\n[] float64\nvalue = 21")"));
    CHECK(!contains(plain, "grad = 1"));
}

TEST_CASE("to_dot: a constant input is named, and shows its value, when the graph kept it") {
    Var mask(Tensor::from_vector({1, 0, 1}, {3}, Dtype::Float64));
    Var a = Var::parameter(Tensor::from_vector({1, 2, 3}, {3}, Dtype::Float64));
    Var loss;
    {
        KeepValuesGuard keep;
        loss = sum(a * mask);
    }
    DotOptions options{.with_values = true, .names = {{"a", a}, {"mask", mask}}};
    CHECK(contains(to_dot(loss, options), R"(label="mask\nconstant, no gradient\n[3] float64\nvalue [1, 0, 1]")"));
    Var unkept = sum(a * mask);  // built without the guard: the constant is drawn, unnamed
    CHECK(contains(to_dot(unkept, options), R"(label="constant, no gradient\n[3] float64"];)"));
}

TEST_CASE("to_dot: a value that needs no gradient is one constant node") {
    Var constant(Tensor::from_vector({1, 2}, {2}, Dtype::Float32));
    std::string dot = to_dot(sum(constant));
    CHECK(count_nodes(dot) == 1);
    CHECK(count_edges(dot) == 0);
    CHECK(contains(dot, R"(label="constant (no graph recorded)\n[] float32")"));
}

TEST_CASE("KeepValuesGuard: off by default, restored when it ends; nodes keep nothing without it") {
    CHECK(!keeping_values());
    Var a = Var::parameter(Tensor::from_vector({1, 2}, {2}, Dtype::Float64));
    {
        KeepValuesGuard keep;
        CHECK(keeping_values());
        {
            KeepValuesGuard nested;
            CHECK(keeping_values());
        }
        CHECK(keeping_values());
    }
    CHECK(!keeping_values());
    Var y = exp(a);
    sum(y).backward();
    CHECK(!y.node()->value.defined());
    CHECK(!y.node()->grad.defined());
    CHECK(y.node()->constant_inputs.empty());
    CHECK(!a.node()->value.defined());
}
