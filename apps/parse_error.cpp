#include "apps/parse_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace nce::apps {
namespace {

// The edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`:
// d[i][j] for the prefixes a[0, i) and b[0, j) (optimal string alignment).
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The candidate nearest to `word`, when it is near enough to be a slip (two edits, or a
// third of its letters in a long word).
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
    for (const std::string& candidate : candidates) {
        size_t distance = edit_distance(word, candidate);
        if (distance < best_distance) best = candidate, best_distance = distance;
    }
    return best;
}

// The deepest command the parser entered, and its path ("nce train").
CLI::App* deepest_command(CLI::App& root, std::string& path) {
    CLI::App* command = &root;
    path = "nce";
    for (;;) {
        std::vector<CLI::App*> chosen = command->get_subcommands();
        if (chosen.empty()) return command;
        command = chosen.front();
        path += " " + command->get_name();
    }
}

std::vector<std::string> subcommand_names(CLI::App& command) {
    std::vector<std::string> names;
    for (CLI::App* sub : command.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    return names;
}

// The commands below `root` that have a subcommand called `word` ("nce korquad", ...).
std::vector<std::string> commands_holding(CLI::App& root, const std::string& word) {
    std::vector<std::string> holders;
    for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; }))
        for (const std::string& name : subcommand_names(*sub))
            if (name == word) holders.push_back("nce " + sub->get_name());
    return holders;
}

std::string joined_with_and(const std::vector<std::string>& items) {
    if (items.size() < 2) return items.empty() ? "" : items.front();
    std::string text = items.front();
    for (size_t i = 1; i + 1 < items.size(); ++i) text += ", " + items[i];
    return text + " and " + items.back();
}

std::string unknown_command(CLI::App& root, CLI::App& command, const std::string& path, const std::string& word) {
    if (std::vector<std::string> holders = commands_holding(root, word); !holders.empty() && &command == &root)
        return fmt::format("'{}' is a command of {}: e.g. {} {} ... ({} --help)", word, joined_with_and(holders),
                           holders.back(), word, holders.back());
    std::string near = nearest(word, subcommand_names(command));
    return fmt::format("'{}' is not a command of {}{} ({} --help lists the commands)", word, path,
                       near.empty() ? "" : fmt::format("; did you mean '{}'?", near), path);
}

std::string unknown_argument(CLI::App& command, const std::string& path, const std::string& word) {
    if (word.rfind("-", 0) != 0) {
        std::string near = nearest(word, subcommand_names(command));
        if (!near.empty()) return unknown_command(command, command, path, word);
        return fmt::format("{}: unexpected argument '{}' ({} --help shows what it takes)", path, word, path);
    }
    std::string flag = word.substr(0, word.find('='));
    std::vector<std::string> flags;
    for (const CLI::Option* option : command.get_options())
        for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    std::string near = nearest(flag, flags);
    return fmt::format("{}: unknown option {}{} ({} --help lists the options)", path, flag,
                       near.empty() ? "" : fmt::format("; did you mean {}?", near), path);
}

}  // namespace

std::string parse_error_line(CLI::App& root, const CLI::ParseError& error) {
    std::string path;
    CLI::App* command = deepest_command(root, path);
    const std::vector<std::string> left = command->remaining();
    const int code = error.get_exit_code();  // CLI11 names some errors after the command; the code is the kind
    if (code == static_cast<int>(CLI::ExitCodes::RequiredError) && std::string(error.what()).find("subcommand") != std::string::npos) {
        if (!left.empty()) return unknown_command(root, *command, path, left.front());
        return fmt::format("{} needs a command: {} ({} --help)", path, joined_with_and(subcommand_names(*command)), path);
    }
    if (code == static_cast<int>(CLI::ExitCodes::ExtrasError)) {
        // CLI11: "The following arguments were not expected: 1 --bogus" (the words, last first).
        std::string what = error.what();
        std::vector<std::string> words;
        size_t colon = what.find(": ");
        for (size_t at = colon == std::string::npos ? what.size() : colon + 2; at < what.size();) {
            size_t end = std::min(what.find(' ', at), what.size());
            if (end > at) words.push_back(what.substr(at, end - at));
            at = end + 1;
        }
        std::reverse(words.begin(), words.end());
        auto option = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.rfind("-", 0) == 0; });
        if (!words.empty()) return unknown_argument(*command, path, option != words.end() ? *option : words.front());
    }
    if (code == static_cast<int>(CLI::ExitCodes::ConversionError)) {
        // CLI11: "Could not convert: --negatives = abc"
        std::string what = error.what();
        size_t colon = what.find(": "), equals = what.find(" = ");
        if (colon != std::string::npos && equals != std::string::npos && equals > colon) {
            std::string flag = what.substr(colon + 2, equals - colon - 2), value = what.substr(equals + 3);
            std::string type;
            try {
                type = command->get_option(flag)->get_type_name();
            } catch (const CLI::Error&) {
            }
            return fmt::format("{}: {} takes {}, got '{}' ({} --help)", path, flag, type.empty() ? "another value" : type,
                               value, path);
        }
    }
    return fmt::format("{}: {} ({} --help)", path, error.what(), path);
}

}  // namespace nce::apps
