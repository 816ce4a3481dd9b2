// Reading and writing safetensors files (the layout is drawn in safetensors.h).
#include "nn/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/json_nesting.h"
#include "nn/half_precision.h"

namespace nce::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors.cpp reads and writes little-endian data with plain copies");

using Json = nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the Python library's limit too
constexpr uint64_t kHeaderAlignment = 8;            // the data starts at a multiple of 8

// ---- dtypes ----

const char* safetensors_dtype_name(Dtype dtype) {
    switch (dtype) {
        case Dtype::Float32: return "F32";
        case Dtype::Float64: return "F64";
        case Dtype::Int64: return "I64";
    }
    return "?";
}

// How a tensor's values are stored in the file: as the dtype it is read into, or as 16-bit
// floats widened to float32 on reading (most model folders are saved in F16 or BF16).
enum class Stored { AsIs, Half, BFloat16 };

struct StoredDtype {
    Dtype dtype;                  // what the tensor is read into
    Stored stored = Stored::AsIs;
    uint64_t element_bytes() const { return stored == Stored::AsIs ? dtype_size(dtype) : 2; }
};

// "F32" -> float32, "F16" -> float32 from halves, and so on; other dtypes of the format are
// named as unsupported.
StoredDtype dtype_from_name(const std::string& name, const std::string& path, const std::string& tensor) {
    if (name == "F32") return {Dtype::Float32};
    if (name == "F64") return {Dtype::Float64};
    if (name == "I64") return {Dtype::Int64};
    if (name == "F16") return {Dtype::Float32, Stored::Half};
    if (name == "BF16") return {Dtype::Float32, Stored::BFloat16};
    static const std::set<std::string> other_known = {"BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "U64",
                                                      "F8_E4M3", "F8_E5M2"};
    if (other_known.count(name))
        fail("read_safetensors: '{}': tensor {} has dtype {}, which nce does not read; nce reads F32, F64, I64, F16 "
             "and BF16",
             path, quoted_for_message(tensor), name);
    fail("read_safetensors: '{}': tensor {} has unknown dtype {} (nce reads F32, F64, I64, F16 and BF16)", path,
         quoted_for_message(tensor), quoted_for_message(name, 40));
}

// ---- the header ----

// One tensor's entry in the header, before its data is read.
struct Entry {
    std::string name;
    StoredDtype dtype;
    Shape shape;
    uint64_t begin = 0;
    uint64_t end = 0;
};

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is the news.
std::string without_json_prefix(const std::string& message) {
    std::size_t close = message.find("] ");
    return message.rfind("[json.exception.", 0) == 0 && close != std::string::npos ? message.substr(close + 2) : message;
}

// A JSON value that must be a non-negative integer.
bool is_count(const Json& value) {
    return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

// Walks the header as SAX events, keeping the keys of each open object: the first key an
// object repeats (JSON parsers would silently keep one of the two). Linear in the header, where
// nlohmann's parse callback re-scans the top-level object at the end of every tensor's entry.
struct RepeatedKeyFinder : nlohmann::json_sax<Json> {
    std::vector<std::set<std::string>> open_objects;
    std::string repeated;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        open_objects.emplace_back();
        return true;
    }
    bool key(string_t& name) override {
        if (!open_objects.back().insert(name).second && repeated.empty()) repeated = name;
        return true;
    }
    bool end_object() override {
        open_objects.pop_back();
        return true;
    }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

// Parses the header text into the top-level object. A name given twice in any object of it
// (a tensor, __metadata__) is an error.
Json parse_header(const std::string& text, const std::string& path) {
    check_json_nesting(text, fmt::format("read_safetensors: '{}': the header", path));
    Json header;
    try {
        header = Json::parse(text);
    } catch (const Json::exception& error) {
        fail("read_safetensors: '{}': the header is not valid JSON: {}", path, without_json_prefix(error.what()));
    }
    NCE_CHECK(header.is_object(), "read_safetensors: '{}': the header must be a JSON object, found a {}", path,
              header.type_name());
    RepeatedKeyFinder finder;
    Json::sax_parse(text, &finder);
    NCE_CHECK(finder.repeated.empty(), "read_safetensors: '{}': the header names {} twice", path, quoted_for_message(finder.repeated));
    return header;
}

std::map<std::string, std::string> read_metadata(const Json& value, const std::string& path) {
    NCE_CHECK(value.is_object(), "read_safetensors: '{}': {} must be an object of strings, found a {}", path,
              kMetadataKey, value.type_name());
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        NCE_CHECK(item.is_string(), "read_safetensors: '{}': {} key {} must map to a string, found a {}", path,
                  kMetadataKey, quoted_for_message(key), item.type_name());
        metadata[key] = item.get<std::string>();
    }
    return metadata;
}

// Checks one tensor's entry: dtype, shape, and a byte range inside the data of exactly
// dtype size · element count bytes.
Entry read_entry(const std::string& name, const Json& value, uint64_t data_bytes, const std::string& path) {
    const std::string shown = quoted_for_message(name);  // the name as a message shows it
    NCE_CHECK(value.is_object(),
              "read_safetensors: '{}': tensor {} must be an object with dtype, shape and data_offsets, found a {}",
              path, shown, value.type_name());
    for (const char* key : {"dtype", "shape", "data_offsets"})
        NCE_CHECK(value.contains(key), "read_safetensors: '{}': tensor {} has no \"{}\"", path, shown, key);
    Entry entry;
    entry.name = name;

    const Json& dtype = value["dtype"];
    NCE_CHECK(dtype.is_string(), "read_safetensors: '{}': tensor {}: dtype must be a string like \"F32\", found {}",
              path, shown, dtype.dump());
    entry.dtype = dtype_from_name(dtype.get<std::string>(), path, name);

    const Json& shape = value["shape"];
    NCE_CHECK(shape.is_array(), "read_safetensors: '{}': tensor {}: shape must be a list of sizes, found {}", path,
              shown, shape.dump());
    // The product of the non-zero sizes must fit too: an empty tensor's strides multiply
    // every size after its 0, and [0, 2^62, 2^62] would overflow them.
    uint64_t element_count = 1, nonzero_product = 1;
    for (const Json& size : shape) {
        NCE_CHECK(is_count(size), "read_safetensors: '{}': tensor {}: shape {} has a size that is not a non-negative "
                  "integer", path, shown, shape.dump());
        uint64_t extent = size.get<uint64_t>();
        NCE_CHECK(extent == 0 || nonzero_product <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 8 / extent,
                  "read_safetensors: '{}': tensor {}: shape {} is too large", path, shown, shape.dump());
        element_count *= extent;
        if (extent != 0) nonzero_product *= extent;
        entry.shape.push_back(static_cast<int64_t>(extent));
    }

    const Json& offsets = value["data_offsets"];
    NCE_CHECK(offsets.is_array() && offsets.size() == 2 && is_count(offsets[0]) && is_count(offsets[1]),
              "read_safetensors: '{}': tensor {}: data_offsets must be [begin, end] with non-negative integers, "
              "found {}",
              path, shown, offsets.dump());
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    NCE_CHECK(entry.begin <= entry.end, "read_safetensors: '{}': tensor {}: data_offsets [{}, {}] end before they begin",
              path, shown, entry.begin, entry.end);
    NCE_CHECK(entry.end <= data_bytes,
              "read_safetensors: '{}': tensor {}: data_offsets [{}, {}] run past the {} data bytes of the file "
              "(is it truncated?)",
              path, shown, entry.begin, entry.end, data_bytes);
    uint64_t expected = element_count * entry.dtype.element_bytes();
    NCE_CHECK(entry.end - entry.begin == expected,
              "read_safetensors: '{}': tensor {}: shape {} {} needs {} bytes, data_offsets [{}, {}] give {}", path,
              shown, shape_string(entry.shape), dtype.get<std::string>(), expected, entry.begin, entry.end,
              entry.end - entry.begin);
    return entry;
}

// The byte ranges, in order, must cover [0, data_bytes) exactly once.
void check_ranges_tile_the_data(std::vector<Entry>& entries, uint64_t data_bytes, const std::string& path) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t covered = 0;  // every byte before this belongs to a tensor
    const Entry* previous = nullptr;
    for (const Entry& entry : entries) {
        NCE_CHECK(entry.begin >= covered,
                  "read_safetensors: '{}': tensor {} (bytes [{}, {})) overlaps tensor {} (bytes [{}, {}))", path,
                  quoted_for_message(entry.name), entry.begin, entry.end, quoted_for_message(previous ? previous->name : ""),
                  previous ? previous->begin : 0,
                  covered);
        NCE_CHECK(entry.begin == covered,
                  "read_safetensors: '{}': data bytes [{}, {}) before tensor {} belong to no tensor", path, covered,
                  entry.begin, quoted_for_message(entry.name));
        if (entry.end > covered) {
            previous = &entry;
            covered = entry.end;
        }
    }
    NCE_CHECK(covered == data_bytes, "read_safetensors: '{}': the last {} data bytes belong to no tensor", path,
              data_bytes - covered);
}

// ---- writing ----

// The header JSON, its tensors in name order, then spaces up to a multiple of 8 bytes.
std::string header_text(const std::map<std::string, Tensor>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header[kMetadataKey] = metadata;
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        uint64_t bytes = tensor.nbytes();
        header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                        {"shape", tensor.shape()},
                        {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::ordered_json::exception& error) {
        fail("write_safetensors: '{}': a tensor name or metadata string is not valid UTF-8: {}", path,
             without_json_prefix(error.what()));
    }
    std::size_t padding = (kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment;
    text.append(padding, ' ');
    return text;
}


// The checked header of an open file: its entries, metadata and where the data begins.
struct CheckedHeader {
    std::vector<Entry> entries;
    std::map<std::string, std::string> metadata;
    uint64_t data_start = 0;
};

CheckedHeader read_checked_header(std::ifstream& file, const std::string& path) {
    std::error_code error;
    NCE_CHECK(!std::filesystem::is_directory(path, error), "read_safetensors: '{}' is a directory, not a file", path);
    file.open(path, std::ios::binary);
    NCE_CHECK(file.is_open(), "read_safetensors: cannot open '{}': {}", path, std::strerror(errno));
    file.seekg(0, std::ios::end);
    uint64_t file_size = static_cast<uint64_t>(file.tellg());
    file.seekg(0);

    // The header length, then the header.
    NCE_CHECK(file_size >= 8,
              "read_safetensors: '{}' is not a safetensors file: {} bytes is shorter than the 8-byte header length",
              path, file_size);
    uint64_t header_length = 0;
    file.read(reinterpret_cast<char*>(&header_length), 8);
    NCE_CHECK(header_length <= file_size - 8,
              "read_safetensors: '{}' is not a safetensors file or is truncated: its header length {} runs past the "
              "end of the {}-byte file",
              path, header_length, file_size);
    NCE_CHECK(header_length <= kMaxHeaderBytes,
              "read_safetensors: '{}': a header of {} bytes is over the {}-byte limit", path, header_length,
              kMaxHeaderBytes);
    std::string text(header_length, '\0');
    NCE_CHECK(file.read(text.data(), static_cast<std::streamsize>(header_length)),
              "read_safetensors: '{}': reading the {}-byte header failed", path, header_length);
    Json header = parse_header(text, path);

    // Every entry checked, then the ranges together.
    CheckedHeader checked;
    checked.data_start = 8 + header_length;
    uint64_t data_bytes = file_size - checked.data_start;
    for (const auto& [name, value] : header.items()) {
        if (name == kMetadataKey)
            checked.metadata = read_metadata(value, path);
        else
            checked.entries.push_back(read_entry(name, value, data_bytes, path));
    }
    check_ranges_tile_the_data(checked.entries, data_bytes, path);
    return checked;
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
    std::ifstream file;
    CheckedHeader checked = read_checked_header(file, path);
    SafetensorsHeader result;
    result.metadata = std::move(checked.metadata);
    for (const Entry& entry : checked.entries)
        result.tensors.emplace(entry.name, TensorInfo{entry.dtype.dtype, entry.shape});
    return result;
}

SafetensorsFile read_safetensors(const std::string& path) {
    std::ifstream file;
    CheckedHeader checked = read_checked_header(file, path);
    const uint64_t data_start = checked.data_start;
    SafetensorsFile result;
    result.metadata = std::move(checked.metadata);
    // The data, straight into each tensor's storage.
    for (const Entry& entry : checked.entries) {
        Tensor tensor = Tensor::empty(entry.shape, entry.dtype.dtype);
        file.seekg(static_cast<std::streamoff>(data_start + entry.begin));
        // As stored: straight into the tensor, or 16-bit floats first, then widened.
        const uint64_t bytes = entry.end - entry.begin;
        const bool as_is = entry.dtype.stored == Stored::AsIs;
        std::vector<uint16_t> halves(as_is ? 0 : static_cast<size_t>(tensor.numel()));
        char* destination = as_is ? static_cast<char*>(tensor.raw_data()) : reinterpret_cast<char*>(halves.data());
        NCE_CHECK(file.read(destination, static_cast<std::streamsize>(bytes)),
                  "read_safetensors: '{}': reading the {} bytes of tensor {} failed", path, bytes,
                  quoted_for_message(entry.name));
        float* values = as_is ? nullptr : tensor.data<float>();
        for (size_t i = 0; i < halves.size(); ++i)
            values[i] = entry.dtype.stored == Stored::Half ? half_to_float(halves[i]) : bfloat16_to_float(halves[i]);
        result.tensors.emplace(entry.name, std::move(tensor));
    }
    return result;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    std::map<std::string, Tensor> host;
    for (const auto& [name, tensor] : tensors) {
        NCE_CHECK(!name.empty(), "write_safetensors: '{}': a tensor has an empty name", path);
        NCE_CHECK(name != kMetadataKey, "write_safetensors: '{}': '{}' is reserved for the metadata, not a tensor name",
                  path, name);
        NCE_CHECK(tensor.defined(), "write_safetensors: '{}': tensor '{}' is undefined", path, name);
        host.emplace(name, tensor.to(Device::CPU));
    }
    std::string header = header_text(host, metadata, path);
    uint64_t header_length = header.size();

    write_file_atomically(path, "write_safetensors", [&](std::FILE* file) {
        bool written = std::fwrite(&header_length, 8, 1, file) == 1 &&
                       std::fwrite(header.data(), 1, header.size(), file) == header.size();
        for (const auto& [name, tensor] : host)
            written = written && std::fwrite(tensor.raw_data(), 1, tensor.nbytes(), file) == tensor.nbytes();
        return written;
    });
}

}  // namespace nce::nn
