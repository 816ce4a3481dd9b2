// Precomputed teacher features for the sig_predictor (nn/sig_predictor.h): how the seed used
// a frozen code model. The frozen model read each function once, offline; what it produced is
// a folder of .npy files, row i of every file describing function i:
//
//   signature_features.npy  float32 or float64 [N, T, in_dim]  the teacher's vector for each
//                           token of the function's signature (and docstring), padded to T
//   signature_mask.npy      int64 or float [N, T]             1 = token, 0 = padding; every row
//                           needs a token. Optional: absent means every position is a token.
//   body_embeddings.npy     float32 or float64 [N, out_dim]    the teacher's embedding of the
//                           function's body: the target the sig_predictor learns to point at
//   groups.npy              int64 [N]                          optional: the file or package of
//                           each function, so a split keeps a group on one side; absent means
//                           every function is a group of its own
//
// The sig_predictor reads the signature's token features and must land near its body's
// embedding: signature -> body retrieval over every body of the folder.
//
// write_synthetic_teacher_features makes such a folder without any teacher, for tests and
// demos: each function has a hidden topic z_i ~ N(0, I_k); its body embedding is
// normalise(B z_i) and each of its L_i signature tokens (4 <= L_i <= T) is C z_i plus
// noise of standard deviation `noise` (B [out_dim, k] and C [in_dim, k] fixed random
// matrices), so the body can be predicted from the signature, but only by pooling tokens and
// learning how C and B relate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/nce.h"

namespace nce::code {

struct TeacherFeatures {
    Tensor signature_features;    // float32 [N, T, in_dim]
    Tensor signature_mask;        // float32 [N, T], 1 = token
    Tensor body_embeddings;       // float32 [N, out_dim], unit rows
    std::vector<int64_t> groups;  // [N]
    std::string folder;

    int64_t rows() const { return signature_features.size(0); }
    int64_t input_dim() const { return signature_features.size(2); }
    int64_t output_dim() const { return body_embeddings.size(1); }
};

// Reads and checks the folder: missing files, wrong ranks, dtypes or row counts, a row with no
// token, values that are not finite or a zero body embedding are one error line naming the file.
TeacherFeatures read_teacher_features(const std::string& folder);

struct SyntheticFeatureOptions {
    int64_t functions = 2000;    // N
    int64_t tokens = 16;         // T
    int64_t input_dim = 32;
    int64_t output_dim = 32;
    int64_t topic_dim = 16;      // k
    int64_t group_size = 10;     // functions per group
    double noise = 10.0;
    uint64_t seed = 13;
};

// Writes the four files into `folder` (created; an existing folder must be empty) through a
// temporary folder beside it that is renamed into place, so the folder is whole or absent.
void write_synthetic_teacher_features(const std::string& folder, const SyntheticFeatureOptions& options);

// Throws unless `folder` is new or an empty folder (checked before any work).
void check_new_feature_folder(const std::string& folder);

// The four files of the layout above, written the same way: features float32 [N, T, in_dim],
// mask int64 [N, T], bodies float32 [N, out_dim], groups int64 [N].
void write_teacher_features(const std::string& folder, const Tensor& features, const Tensor& mask,
                            const Tensor& bodies, const Tensor& groups);

}  // namespace nce::code
