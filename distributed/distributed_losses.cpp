#include "distributed/distributed_losses.h"

#include <numeric>

#include "distributed/anchor_rows_infonce.h"
#include "distributed/collectives.h"
#include "distributed/gather_rows.h"
#include "distributed/world.h"
#include "losses/loss_common.h"

namespace nce::distributed {

namespace {

// Every rank holds at least `minimum` rows of the anchors; checked on counts every rank sees.
void check_rows_per_rank(const std::vector<int64_t>& rows_per_rank, int64_t minimum, const char* loss,
                         const char* what) {
    for (size_t r = 0; r < rows_per_rank.size(); ++r)
        NCE_CHECK(rows_per_rank[r] >= minimum,
                  "{}: rank {} holds {} {}; every rank needs at least {} (give each rank a slice of the batch)", loss,
                  r, rows_per_rank[r], what, minimum);
}

// Whether every rank passed negatives or none did (a collective).
bool negatives_on_every_rank(const Var& negatives, const char* loss) {
    std::vector<int64_t> defined = all_gather_values(negatives.defined() ? 1 : 0);
    int64_t ranks_with = std::accumulate(defined.begin(), defined.end(), int64_t{0});
    NCE_CHECK(ranks_with == 0 || ranks_with == static_cast<int64_t>(defined.size()),
              "{}: {} of {} ranks passed negatives; pass them on every rank (an empty [0, d] where a rank has none) "
              "or on none", loss, ranks_with, defined.size());
    return ranks_with > 0;
}

// Columns first_row, first_row + 1, ..., first_row + n - 1.
std::vector<int64_t> columns_from(int64_t first_row, int64_t n) {
    std::vector<int64_t> columns(static_cast<size_t>(n));
    std::iota(columns.begin(), columns.end(), first_row);
    return columns;
}

// The candidates of the q->p direction: C = [P; Negatives], and where this rank's p starts.
struct Candidates {
    Var rows;                 // [N + M, d]
    int64_t first_positive;   // this rank's p_0 in C
    int64_t pairs;            // N, the global number of (q, p) pairs
};

Candidates gather_candidates(const Var& p, const Var& negatives, const char* loss) {
    bool with_negatives = negatives_on_every_rank(negatives, loss);
    GatheredRows positives = gather_rows(p);  // P [N, d]
    check_rows_per_rank(positives.rows_per_rank, 1, loss, "pairs (rows of q, p)");
    NCE_CHECK(positives.total_rows() >= 2, "{}: the global batch has {} pair; it needs N >= 2", loss,
              positives.total_rows());
    Candidates candidates{positives.rows, positives.first_row, positives.total_rows()};
    if (with_negatives) candidates.rows = concat({positives.rows, gather_rows(negatives).rows}, 0);  // [P; Neg]
    return candidates;
}

void check_pair(const Var& q, const Var& p, const char* loss) {
    losses::check_matrix(q, loss, "q");
    losses::check_matrix(p, loss, "p");
    losses::check_same_shape(q, p, loss, "q", "p");
}

}  // namespace

// Rank r's share of InfoNCE:  (1/N) sum over its anchors i of ( lse_j q_i·c_j/tau - q_i·p_i/tau ),
// C = [P; Negatives] gathered, the positive of local row i at column first_positive + i.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_pair(q, p, "infonce");
    Candidates candidates = gather_candidates(p, negatives, "infonce");
    return anchor_rows_infonce(q, candidates.rows, columns_from(candidates.first_positive, q.size(0)), {}, log_tau,
                               tau, 1.0 / static_cast<double>(candidates.pairs), "infonce");
}

// Rank r's share of symmetric InfoNCE: half the q->p rows against [P; Negatives] plus half
// the p->q rows against Q, each over the global N.
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_pair(q, p, "infonce_symmetric");
    Candidates candidates = gather_candidates(p, negatives, "infonce_symmetric");
    GatheredRows queries = gather_rows(q);  // Q [N, d]
    const double half_over_n = 0.5 / static_cast<double>(candidates.pairs);
    std::vector<int64_t> positive = columns_from(candidates.first_positive, q.size(0));
    Var q_to_p = anchor_rows_infonce(q, candidates.rows, positive, {}, log_tau, tau, half_over_n, "infonce_symmetric");
    Var p_to_q = anchor_rows_infonce(p, queries.rows, positive, {}, log_tau, tau, half_over_n, "infonce_symmetric");
    return q_to_p + p_to_q;
}

// Rank r's share of NT-Xent. Its anchors are its own 2 B_r rows; the candidates are the
// global Z = [V1; V2] (2B rows). Local row a of the first view is global row first + a and
// its positive is B + first + a; local row B_r + a of the second view is global row
// B + first + a and its positive first + a. Each row leaves itself out (mask_self).
//   share = (1/2B) sum over its 2 B_r anchors of ( lse_j z_a·z_j/tau - z_a·z_p(a)/tau )
Var ntxent(const Var& z, const Var& log_tau, double tau, bool mask_self) {
    losses::check_matrix(z, "ntxent", "z");
    NCE_CHECK(z.size(0) % 2 == 0, "ntxent: z must stack two views of this rank's B items, so 2B rows; got {} rows "
              "(shape {})", z.size(0), shape_string(z.shape()));
    const int64_t local_items = z.size(0) / 2;
    GatheredRows first_views = gather_rows(slice(z, 0, 0, local_items));                 // V1 [B, d]
    GatheredRows second_views = gather_rows(slice(z, 0, local_items, 2 * local_items));  // V2 [B, d]
    check_rows_per_rank(first_views.rows_per_rank, 1, "ntxent", "items (z has 2 rows per item)");
    const int64_t B = first_views.total_rows(), first = first_views.first_row;
    NCE_CHECK(B >= 2, "ntxent: the global batch has {} item; it needs B >= 2", B);

    std::vector<int64_t> positive(static_cast<size_t>(2 * local_items)), itself(positive.size(), -1);
    for (int64_t a = 0; a < local_items; ++a) {
        positive[static_cast<size_t>(a)] = B + first + a;                 // first view -> its second view
        positive[static_cast<size_t>(local_items + a)] = first + a;       // second view -> its first view
        if (mask_self) {
            itself[static_cast<size_t>(a)] = first + a;
            itself[static_cast<size_t>(local_items + a)] = B + first + a;
        }
    }
    Var candidates = concat({first_views.rows, second_views.rows}, 0);  // Z [2B, d]
    return anchor_rows_infonce(z, candidates, positive, itself, log_tau, tau, 1.0 / (2.0 * static_cast<double>(B)),
                               "ntxent");
}

double global_loss(const Var& share) {
    NCE_CHECK(share.defined() && share.value().numel() == 1, "global_loss: the share must be one value");
    return all_reduce_sum(share.value().item());
}

}  // namespace nce::distributed
