// The retrieval runs' moves between the host and the device.
#include "retrieval/embedding/run_device.h"

#include <algorithm>
#include <numeric>
#include <vector>


namespace nce::retrieval {

std::unique_ptr<nn::EmbeddingModel> to_run_device(std::unique_ptr<nn::EmbeddingModel> model, Device device) {
    model->to(device);
    return model;
}

Device model_device(nn::EmbeddingModel& model) { return model.parameters().front()->value().device(); }

// A batch is padded to its longest row, and a padded token costs the encoder as much as a
// real one. So a batch of more than kLengthGroupRows rows is embedded in groups: the rows
// sorted by length (stable), kLengthGroupRows at a time, each group padded only to its own
// longest row. A row's embedding depends on its own tokens alone, so grouping changes which
// dropout numbers a row draws, and nothing else; the rows come back in the batch's order.
constexpr int64_t kLengthGroupRows = 32;

Var encode_on_model_device(nn::EmbeddingModel& model, const data::EncodedBatch& batch, Generator* dropout) {
    const Device device = model_device(model);
    const int64_t rows = batch.ids.size(0), width = batch.ids.size(1);
    if (rows <= kLengthGroupRows) return model.encode(batch.ids.to(device), batch.mask.to(device), dropout);

    const std::vector<int64_t> ids = batch.ids.to(Device::CPU).to_indices();    // [B * T]
    const std::vector<int64_t> mask = batch.mask.to(Device::CPU).to_indices();  // [B * T]
    std::vector<int64_t> lengths(static_cast<size_t>(rows), 0);  // up to the last real token
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t t = 0; t < width; ++t)
            if (mask[static_cast<size_t>(row * width + t)] != 0) lengths[static_cast<size_t>(row)] = t + 1;
    std::vector<int64_t> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return lengths[static_cast<size_t>(a)] < lengths[static_cast<size_t>(b)]; });

    std::vector<Var> groups;  // [g, D] each, the rows in `order`
    for (int64_t first = 0; first < rows; first += kLengthGroupRows) {
        const int64_t count = std::min(kLengthGroupRows, rows - first);
        const int64_t longest = std::max<int64_t>(1, lengths[static_cast<size_t>(order[static_cast<size_t>(first + count - 1)])]);
        std::vector<int64_t> group_ids(static_cast<size_t>(count * longest)), group_mask(group_ids.size());
        for (int64_t g = 0; g < count; ++g)
            for (int64_t t = 0; t < longest; ++t) {
                const size_t from = static_cast<size_t>(order[static_cast<size_t>(first + g)] * width + t);
                group_ids[static_cast<size_t>(g * longest + t)] = ids[from];
                group_mask[static_cast<size_t>(g * longest + t)] = mask[from];
            }
        groups.push_back(model.encode(Tensor::from_indices(group_ids, {count, longest}).to(device),
                                      Tensor::from_indices(group_mask, {count, longest}).to(device), dropout));
    }
    // Row order[i] of the batch is row i of the groups joined: row r is at position_of[r].
    std::vector<int64_t> position_of(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) position_of[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
    return index_select(concat(groups, 0), Tensor::from_indices(position_of, {rows}).to(device));  // [B, D]
}

Tensor beside(const Var& embeddings, const Tensor& tensor) { return tensor.to(embeddings.value().device()); }

}  // namespace nce::retrieval
