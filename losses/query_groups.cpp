#include "losses/query_groups.h"

#include <map>

namespace nce::losses {
namespace {

// g [N] (float64, on `device`) -> M_ij = 1 where g_i = g_j, else 0   [N, N]
// keep_where keeps 0 where the difference g_i - g_j is nonzero and fills 1 where it is 0:
// two passes over [N, N] after the difference, where 1 - step(|g_i - g_j|) takes four.
Tensor equal_numbers_mask(const std::vector<double>& numbers, Device device) {
    int64_t n = static_cast<int64_t>(numbers.size());
    Tensor g = Tensor::from_vector(numbers, {n}, Dtype::Float64).to(device);  // [N]
    Tensor difference = g.reshape({n, 1}) - g.reshape({1, n});                // g_i - g_j  [N, N]
    return keep_where(Tensor::zeros({n, n}, Dtype::Float64, device), difference, 1.0);
}

}  // namespace

QueryGroups query_groups(const std::vector<int64_t>& qid, Device device) {
    std::map<int64_t, int64_t> number_of;  // qid -> its dense number
    std::vector<int64_t> group_size;       // by dense number
    std::vector<double> numbers;           // g [N]
    for (int64_t id : qid) {
        auto [entry, is_new] = number_of.emplace(id, static_cast<int64_t>(group_size.size()));
        if (is_new) group_size.push_back(0);
        ++group_size[entry->second];
        numbers.push_back(static_cast<double>(entry->second));
    }
    QueryGroups groups;
    groups.same_query = equal_numbers_mask(numbers, device);
    for (int64_t size : group_size) groups.ordered_pairs += size * (size - 1);
    return groups;
}

// Row-major, I is u = [1, 0, ..., 0] (n + 1 entries) repeated, cut to n·n entries: the 1s fall
// at the flat positions m (n + 1) = m n + m, i.e. at row m, column m. Two copies on the device,
// after copying the n + 1 entries of u there.
Tensor identity_on(int64_t n, Device device) {
    std::vector<double> unit(static_cast<size_t>(n + 1), 0.0);
    unit[0] = 1.0;
    Tensor u = Tensor::from_vector(unit, {n + 1}, Dtype::Float64).to(device);  // [n + 1]
    Tensor repeated = repeat_rows(u, n).reshape({n * (n + 1)});                 // [n (n + 1)]
    return slice(repeated, 0, 0, n * n).reshape({n, n});                         // [n, n]
}

}  // namespace nce::losses
