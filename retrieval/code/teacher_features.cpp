#include "retrieval/code/teacher_features.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace nce::code {
namespace {

namespace fs = std::filesystem;

// Reads one file of the folder, naming it in any error.
Tensor read_file(const fs::path& path) {
    try {
        return read_npy(path.string());
    } catch (const Error& error) {
        std::string message = error.what();
        if (message.find(path.string()) == std::string::npos) message = fmt::format("{}: {}", path.string(), message);
        throw Error(message);
    }
}

void check_float(const Tensor& tensor, const fs::path& path) {
    NCE_CHECK(is_floating(tensor.dtype()), "{}: must be float32 or float64, got {}", path.string(),
              dtype_name(tensor.dtype()));
    NCE_CHECK(all_finite(tensor), "{}: holds values that are not finite (NaN or infinity)", path.string());
}

// Each row divided by its L2 norm; a zero row is an error naming the file and row.
Tensor unit_rows(const Tensor& rows, const fs::path& path) {
    Tensor norms = sqrt(sum(square(rows), 1, true));  // [N, 1]
    const double* norm = norms.data<double>();
    for (int64_t i = 0; i < norms.numel(); ++i)
        NCE_CHECK(norm[i] > 0, "{}: row {} is all zeros; every body needs an embedding", path.string(), i);
    return rows / norms;
}

}  // namespace

TeacherFeatures read_teacher_features(const std::string& folder) {
    std::error_code error_code;
    NCE_CHECK(fs::is_directory(folder, error_code),
              "features folder {}: no such folder; it must hold signature_features.npy and body_embeddings.npy "
              "(nce code make-features --out DIR writes an example)", folder);
    fs::path root = folder;
    fs::path features_path = root / "signature_features.npy", mask_path = root / "signature_mask.npy",
             bodies_path = root / "body_embeddings.npy", groups_path = root / "groups.npy";
    for (const fs::path& required : {features_path, bodies_path})
        NCE_CHECK(fs::exists(required, error_code), "features folder {}: missing {} (see nce code features --help)", folder,
                  required.filename().string());

    TeacherFeatures result;
    result.folder = folder;
    Tensor features = read_file(features_path);
    NCE_CHECK(features.rank() == 3 && features.size(0) > 0 && features.size(1) > 0 && features.size(2) > 0,
              "{}: expected a non-empty [N, T, in_dim] array, got shape {}", features_path.string(),
              shape_string(features.shape()));
    check_float(features, features_path);
    int64_t rows = features.size(0), tokens = features.size(1);

    Tensor bodies = read_file(bodies_path);
    NCE_CHECK(bodies.rank() == 2 && bodies.size(0) == rows && bodies.size(1) > 0,
              "{}: expected [N, out_dim] with N = {} (the rows of signature_features.npy), got shape {}",
              bodies_path.string(), rows, shape_string(bodies.shape()));
    check_float(bodies, bodies_path);

    Tensor mask = Tensor::full({rows, tokens}, 1.0, Dtype::Float32);
    if (fs::exists(mask_path, error_code)) {
        Tensor read = read_file(mask_path);
        NCE_CHECK(read.rank() == 2 && read.size(0) == rows && read.size(1) == tokens,
                  "{}: expected [N, T] = [{}, {}] like signature_features.npy, got shape {}", mask_path.string(), rows,
                  tokens, shape_string(read.shape()));
        mask = read.to(Dtype::Float64);
        const double* m = mask.data<double>();
        for (int64_t i = 0; i < rows; ++i) {
            bool any_token = false;
            for (int64_t t = 0; t < tokens; ++t) {
                NCE_CHECK(m[i * tokens + t] == 0 || m[i * tokens + t] == 1, "{}: row {} holds {}; use 1 for a token and "
                          "0 for padding", mask_path.string(), i, m[i * tokens + t]);
                any_token = any_token || m[i * tokens + t] != 0;
            }
            NCE_CHECK(any_token, "{}: row {} has no token; every signature needs at least one", mask_path.string(), i);
        }
        mask = mask.to(Dtype::Float32);
    }

    result.groups.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) result.groups[static_cast<size_t>(i)] = i;
    if (fs::exists(groups_path, error_code)) {
        Tensor groups = read_file(groups_path);
        NCE_CHECK(groups.dtype() == Dtype::Int64 && groups.rank() == 1 && groups.size(0) == rows,
                  "{}: expected int64 [N] with N = {}, got {} {}", groups_path.string(), rows,
                  dtype_name(groups.dtype()), shape_string(groups.shape()));
        result.groups = groups.to_indices();
    }
    result.signature_features = features.to(Dtype::Float32);
    result.signature_mask = mask;
    result.body_embeddings = unit_rows(bodies.to(Dtype::Float64), bodies_path).to(Dtype::Float32);
    return result;
}

void write_synthetic_teacher_features(const std::string& folder, const SyntheticFeatureOptions& options) {
    NCE_CHECK(options.functions >= 2 && options.tokens >= 4 && options.input_dim > 0 && options.output_dim > 0 &&
                  options.topic_dim > 0 && options.group_size > 0 && options.noise >= 0,
              "make-features: need functions >= 2, tokens >= 4 and positive sizes (got functions {}, tokens {})",
              options.functions, options.tokens);
    check_new_feature_folder(folder);

    int64_t n = options.functions, t_max = options.tokens, k = options.topic_dim;
    Generator generator(options.seed);
    Tensor topics = generator.normal({n, k}, Dtype::Float64);                       // z   [N, k]
    Tensor to_body = generator.normal({options.output_dim, k}, Dtype::Float64);     // B   [out, k]
    Tensor to_token = generator.normal({options.input_dim, k}, Dtype::Float64);     // C   [in, k]
    Tensor bodies = matmul(topics, to_body, Transpose::Second);                     // z B^T [N, out]
    Tensor token_means = matmul(topics, to_token, Transpose::Second);               // z C^T [N, in]
    Tensor noise = generator.normal({n, t_max, options.input_dim}, Dtype::Float64, 0.0, options.noise);
    Tensor lengths = generator.uniform({n}, Dtype::Float64, 4.0, static_cast<double>(t_max) + 1.0);

    Tensor features = Tensor::zeros({n, t_max, options.input_dim}, Dtype::Float32);
    Tensor mask = Tensor::zeros({n, t_max}, Dtype::Int64);
    Tensor groups = Tensor::zeros({n}, Dtype::Int64);
    {
        float* f = features.data<float>();
        int64_t* m = mask.data<int64_t>();
        int64_t* g = groups.data<int64_t>();
        const double* mean = token_means.data<double>();
        const double* e = noise.data<double>();
        const double* length = lengths.data<double>();
        int64_t d = options.input_dim;
        for (int64_t i = 0; i < n; ++i) {
            auto real_tokens = std::min<int64_t>(t_max, static_cast<int64_t>(std::floor(length[i])));
            for (int64_t t = 0; t < real_tokens; ++t) {
                m[i * t_max + t] = 1;
                for (int64_t j = 0; j < d; ++j)
                    f[(i * t_max + t) * d + j] = static_cast<float>(mean[i * d + j] + e[(i * t_max + t) * d + j]);
            }
            g[i] = i / options.group_size;
        }
    }

    // Everything into a temporary folder beside the target, then one rename.
    write_teacher_features(folder, features, mask, bodies.to(Dtype::Float32), groups);
}

void check_new_feature_folder(const std::string& folder) {
    std::error_code error_code;
    if (fs::exists(folder, error_code))
        NCE_CHECK(fs::is_directory(folder, error_code) && fs::is_empty(folder, error_code),
                  "make-features: {} exists and is not an empty folder; give a new folder", folder);
}

void write_teacher_features(const std::string& folder, const Tensor& features, const Tensor& mask,
                            const Tensor& bodies, const Tensor& groups) {
    check_new_feature_folder(folder);
    fs::path target = folder;
    std::error_code error_code;
    fs::path partial = target;
    partial += fmt::format(".partial-{}", static_cast<uint64_t>(::getpid()));
    fs::remove_all(partial, error_code);
    try {
        fs::create_directories(partial);
        write_npy((partial / "signature_features.npy").string(), features);
        write_npy((partial / "signature_mask.npy").string(), mask);
        write_npy((partial / "body_embeddings.npy").string(), bodies);
        write_npy((partial / "groups.npy").string(), groups);
        if (fs::exists(target, error_code)) fs::remove(target);  // empty, checked above
        if (target.has_parent_path()) fs::create_directories(target.parent_path());
        fs::rename(partial, target);
    } catch (const std::exception& failure) {
        fs::remove_all(partial, error_code);
        fail("make-features: cannot write {}: {}; nothing was written", folder, failure.what());
    }
}

}  // namespace nce::code
