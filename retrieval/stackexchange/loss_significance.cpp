// Each loss of a comparison view against the best one: the paired bootstrap and the marks.
#include "retrieval/stackexchange/loss_significance.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/error.h"

namespace nce::stackexchange {

using retrieval::per_query_values;

SignificanceAgainstBest mark_losses_against_best(retrieval::MetricTable& table, const std::vector<std::string>& losses,
                                                 const std::string& metric, double alpha,
                                                 const eval::BootstrapOptions& bootstrap) {
    NCE_CHECK(!losses.empty(), "loss significance: no losses to compare in '{}'", table.title);
    SignificanceAgainstBest significance;
    significance.metric = metric;
    significance.alpha = alpha;
    significance.bootstrap = bootstrap;
    // The best: the highest value, the first listed on a tie (strictly greater replaces it).
    double best_value = 0;
    for (const std::string& loss : losses) {
        per_query_values(table, loss, metric);
        double value = table.row(loss).metrics.at(metric);
        if (significance.best.empty() || value > best_value) {
            significance.best = loss;
            best_value = value;
        }
    }
    const std::vector<double>& best_values = per_query_values(table, significance.best, metric);
    table.mark_column = fmt::format("vs best {}", metric);
    for (retrieval::MetricRow& row : table.rows) {
        bool is_loss = std::find(losses.begin(), losses.end(), row.name) != losses.end();
        if (!is_loss) continue;
        if (row.name == significance.best) {
            row.mark = "best";
            continue;
        }
        eval::PairedBootstrapTest test =
            eval::paired_bootstrap_test(per_query_values(table, row.name, metric), best_values, bootstrap);
        row.mark = significance_mark(test, alpha, bootstrap.resamples);
        significance.others.push_back({row.name, test});
    }
    // The best loss against the untrained model, where the table has it: whether training on
    // the pairs moved the model beyond what the choice of test questions explains.
    for (const retrieval::MetricRow& row : table.rows)
        if ((row.name == kUntrainedRow || row.name == kZeroShotRow) && row.per_query.count(metric) != 0) {
            significance.best_against_untrained =
                eval::paired_bootstrap_test(best_values, row.per_query.at(metric), bootstrap);
            significance.start = row.name;
        }
    return significance;
}

nlohmann::json significance_to_json(const SignificanceAgainstBest& significance) {
    nlohmann::json losses = nlohmann::json::object();
    for (const LossAgainstBest& other : significance.others)
        losses[other.loss] = retrieval::paired_test_to_json(other.test, significance.alpha);
    nlohmann::json against_untrained = nullptr;
    if (significance.best_against_untrained)
        against_untrained = retrieval::paired_test_to_json(*significance.best_against_untrained, significance.alpha);
    return {{"metric", significance.metric},
            {"best", significance.best},
            {"best_against_untrained", against_untrained},
            {"alpha", significance.alpha},
            {"method", "paired bootstrap over test questions, the same resampled questions for both losses; "
                       "p two-sided = min(1, 2 * share of replicates where (loss - best) does not keep its sign); "
                       "difference = loss - best; no correction for testing several losses"},
            {"resamples", significance.bootstrap.resamples},
            {"seed", significance.bootstrap.seed},
            {"losses", losses}};
}

std::string best_against_untrained_line(const std::string& view, const SignificanceAgainstBest& significance) {
    if (!significance.best_against_untrained) return "";
    const eval::PairedBootstrapTest& test = *significance.best_against_untrained;
    return fmt::format("{} view: {} against the {}: {} {:+.3f} [{:+.3f}, {:+.3f}], {}{}\n", view, significance.best,
                       significance.start == kZeroShotRow ? "pretrained model, zero-shot" : "untrained model",
                       significance.metric, test.difference, test.low, test.high,
                       significance_mark(test, significance.alpha, significance.bootstrap.resamples),
                       test.significant(significance.alpha) ? " (above it beyond the noise)" : " (no difference)");
}

std::string significance_note(const std::string& metric, double alpha, const eval::BootstrapOptions& bootstrap) {
    return fmt::format(
        "vs best {0}: each loss against the loss with the highest {0} in that view, paired bootstrap over the test "
        "questions ({1} resamples, seed {2}), two-sided p; * = the difference is significant at {3:g}% (p < {4:g}), "
        "each loss tested on its own (no correction for testing several)\n",
        metric, bootstrap.resamples, bootstrap.seed, 100 * alpha, alpha);
}

}  // namespace nce::stackexchange
