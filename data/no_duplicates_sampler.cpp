#include "data/no_duplicates_sampler.h"

#include <string_view>
#include <unordered_set>

#include "engine/error.h"

namespace nce::data {

std::vector<std::vector<size_t>> pack_units(const std::vector<BatchUnit>& units, const RetrievalDataset& dataset,
                                            int64_t batch_size, bool no_duplicates) {
    NCE_CHECK(batch_size >= 1, "batch packing: batch_size must be at least 1, got {}", batch_size);
    for (const BatchUnit& unit : units)
        NCE_CHECK(unit.rows >= 1 && unit.rows <= batch_size,
                  "batch packing: question {} takes {} rows, outside [1, batch_size = {}]", unit.query, unit.rows,
                  batch_size);

    std::vector<std::vector<size_t>> batches;
    std::vector<size_t> waiting(units.size());
    for (size_t position = 0; position < units.size(); ++position) waiting[position] = position;

    while (!waiting.empty()) {
        std::vector<size_t> batch;
        std::vector<size_t> still_waiting;
        int64_t rows = 0;
        // The texts already in this batch (views into the dataset's strings).
        std::unordered_set<std::string_view> query_texts_in_batch, passage_texts_in_batch;

        for (size_t position : waiting) {
            const BatchUnit& unit = units[position];
            bool fits = rows + unit.rows <= batch_size;  // (a full batch lets nothing in: no text lookups)
            if (fits && no_duplicates) {
                fits = !query_texts_in_batch.count(dataset.queries[unit.query].text);
                for (int64_t passage : unit.passages)
                    fits = fits && !passage_texts_in_batch.count(dataset.passages[passage].text);
            }
            if (!fits) {
                still_waiting.push_back(position);
                continue;
            }
            batch.push_back(position);
            rows += unit.rows;
            query_texts_in_batch.insert(dataset.queries[unit.query].text);
            for (int64_t passage : unit.passages) passage_texts_in_batch.insert(dataset.passages[passage].text);
        }
        batches.push_back(std::move(batch));
        waiting = std::move(still_waiting);
    }
    return batches;
}

}  // namespace nce::data
