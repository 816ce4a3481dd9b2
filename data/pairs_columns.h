// Reading a pairs file (data/pairs_reader.h): the column names, each checked as the header
// (or the first JSON line) gives it, then the set as a whole.
#pragma once
#include <optional>
#include <unordered_map>
#include <vector>

#include "data/pairs_cells.h"

namespace nce::data::pairs_detail {

enum class Role { Anchor, Positive, Negative, Score, QueryId };

struct ColumnRole {
    Role role;
    int64_t number = 0;  // negative_N: N; plain "negative": 0
};

inline std::optional<ColumnRole> role_of(std::string_view name) {
    if (name == "anchor") return ColumnRole{Role::Anchor};
    if (name == "positive") return ColumnRole{Role::Positive};
    if (name == "negative") return ColumnRole{Role::Negative, 0};
    if (name == "score") return ColumnRole{Role::Score};
    if (name == "query_id") return ColumnRole{Role::QueryId};
    constexpr std::string_view prefix = "negative_";
    if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
    std::string_view digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.front() == '0') return std::nullopt;
    int64_t number = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        number = number * 10 + (c - '0');
    }
    return ColumnRole{Role::Negative, number};
}

// The columns of a pairs file, checked one name at a time as the header (or the first JSON
// line) gives them, so that a header of a million bad names stops at the first.
class ColumnSet {
public:
    ColumnSet(const std::string& path, PairsFormat format)
        : path_(path), format_(format), where_(format == PairsFormat::JsonLines ? "the first row" : "the header") {}

    // Adds the next column, or returns what is wrong with `name` (for a one-line file error,
    // after the file's name).
    std::optional<std::string> add(std::string_view name) {
        if (name.empty())
            return fmt::format("column {} of {} has no name; name every column ({})", names_.size() + 1, where_,
                               kAllowedColumns);
        std::optional<ColumnRole> role = role_of(name);
        if (!role) {
            std::string hint;
            if (format_ == PairsFormat::Csv && name.find('\t') != std::string_view::npos)
                hint = " (the names are separated by tabs: give the format tsv, or name the file .tsv)";
            if (format_ == PairsFormat::Tsv && name.find(',') != std::string_view::npos)
                hint = " (the names are separated by commas: give the format csv, or name the file .csv)";
            return fmt::format("unknown column '{}'{}; a pairs file's columns are {}", shown(name), hint,
                               kAllowedColumns);
        }
        if (index_.count(std::string(name)))
            return fmt::format("column '{}' appears twice in {}; keep one of them", shown(name), where_);
        index_.emplace(std::string(name), static_cast<int64_t>(names_.size()));
        names_.emplace_back(name);
        roles_.push_back(*role);
        return std::nullopt;
    }

    // After the last name: the checks on the set as a whole. Throws.
    void finish(PairsFile& file) {
        bool anchor = false, positive = false, plain_negative = false;
        int64_t numbered = 0, highest = 0;
        for (const ColumnRole& role : roles_) {
            anchor |= role.role == Role::Anchor;
            positive |= role.role == Role::Positive;
            file.has_score |= role.role == Role::Score;
            file.has_query_id |= role.role == Role::QueryId;
            if (role.role == Role::Negative) {
                if (role.number == 0) plain_negative = true;
                else {
                    ++numbered;
                    highest = std::max(highest, role.number);
                }
            }
        }
        std::string listed = shown(fmt::format("{}", fmt::join(names_, ", ")), 120);
        for (auto [present, name] : {std::pair{anchor, "anchor"}, std::pair{positive, "positive"}})
            NCE_CHECK(present, "{}: no '{}' column (the columns are: {}); a pairs file needs anchor and positive columns",
                      path_, name, listed);
        NCE_CHECK(!(plain_negative && numbered > 0),
                  "{}: has both a 'negative' column and numbered ones; use either negative or negative_1 .. negative_K",
                  path_);
        if (highest != numbered) {  // names are distinct, so the numbers are: a gap below `highest`
            std::vector<bool> seen(static_cast<size_t>(numbered) + 1, false);
            for (const ColumnRole& role : roles_)
                if (role.role == Role::Negative && role.number <= numbered) seen[static_cast<size_t>(role.number)] = true;
            int64_t missing = 1;
            while (seen[static_cast<size_t>(missing)]) ++missing;
            fail("{}: negative columns must be numbered 1 .. K without gaps; negative_{} is missing (there is a "
                 "negative_{})",
                 path_, missing, highest);
        }
        file.columns = names_;
        file.negative_columns = plain_negative ? 1 : numbered;
        negative_order_.clear();
        for (size_t i = 0; i < roles_.size(); ++i)
            if (roles_[i].role == Role::Negative) negative_order_.push_back(static_cast<int64_t>(i));
        std::sort(negative_order_.begin(), negative_order_.end(), [&](int64_t a, int64_t b) {
            return roles_[static_cast<size_t>(a)].number < roles_[static_cast<size_t>(b)].number;
        });
    }

    size_t size() const { return names_.size(); }
    const std::string& name(size_t i) const { return names_[i]; }
    const ColumnRole& role(size_t i) const { return roles_[i]; }
    const std::vector<int64_t>& negative_order() const { return negative_order_; }
    int64_t index_of(const std::string& name) const {
        auto found = index_.find(name);
        return found == index_.end() ? -1 : found->second;
    }

private:
    std::string path_;
    PairsFormat format_;
    const char* where_;
    std::vector<std::string> names_;
    std::vector<ColumnRole> roles_;
    std::unordered_map<std::string, int64_t> index_;
    std::vector<int64_t> negative_order_;  // column indices of the negatives, by number
};

}  // namespace nce::data::pairs_detail
