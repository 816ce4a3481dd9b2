#include "retrieval/stackexchange/generated_site.h"

#include <fmt/core.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/error.h"
#include "engine/random.h"

namespace nce::stackexchange {
namespace {

// One concept, written in any of its three forms.
using Concept = std::array<const char*, 3>;

struct Topic {
    const char* tag;
    std::array<Concept, 8> concepts;
};

// Every form appears once in the whole list, so a form names its concept.
const std::vector<Topic>& topics() {
    static const std::vector<Topic> list = {
        {"hops", {{{"hops", "bines", "cones"}, {"bitterness", "bite", "harshness"}, {"aroma", "smell", "scent"},
                   {"citrus", "grapefruit", "zest"}, {"pellets", "plugs", "flowers"}, {"alpha", "humulone", "isomers"},
                   {"resin", "lupulin", "oils"}, {"boil", "simmer", "kettle"}}}},
        {"yeast", {{{"yeast", "culture", "strain"}, {"starter", "propagation", "slurry"},
                    {"attenuation", "dryness", "conversion"}, {"esters", "fruitiness", "banana"},
                    {"pitching", "inoculation", "dosing"}, {"flocculation", "settling", "clumping"},
                    {"vitality", "viability", "health"}, {"diacetyl", "butterscotch", "buttery"}}}},
        {"malt", {{{"malt", "grist", "grain"}, {"crystal", "caramel", "cara"}, {"roast", "char", "toast"},
                   {"mash", "steep", "infusion"}, {"enzymes", "amylase", "diastase"},
                   {"sweetness", "sugariness", "residual"}, {"husk", "hull", "chaff"}, {"color", "hue", "shade"}}}},
        {"water", {{{"water", "liquor", "supply"}, {"chlorine", "chloramine", "disinfectant"},
                    {"hardness", "minerals", "calcium"}, {"ph", "acidity", "alkalinity"}, {"gypsum", "sulfate", "salts"},
                    {"filter", "carbon", "purifier"}, {"softener", "sodium", "brine"},
                    {"profile", "chemistry", "composition"}}}},
        {"carbonation", {{{"carbonation", "fizz", "sparkle"}, {"priming", "dextrose", "corn"},
                          {"bottles", "longnecks", "stubbies"}, {"keg", "cornelius", "tank"},
                          {"pressure", "psi", "force"}, {"gushing", "overflow", "fountain"}, {"caps", "crowns", "lids"},
                          {"conditioning", "maturing", "resting"}}}},
        {"serving", {{{"glass", "tulip", "snifter"}, {"chilled", "cold", "icy"}, {"pour", "decant", "serve"},
                      {"foam", "head", "lacing"}, {"tap", "faucet", "draft"}, {"fridge", "refrigerator", "cooler"},
                      {"label", "packaging", "sticker"}, {"pairing", "match", "accompaniment"}}}},
        {"sour", {{{"sour", "tart", "acidic"}, {"brett", "brettanomyces", "funk"}, {"lactobacillus", "lacto", "bacteria"},
                   {"barrel", "cask", "oak"}, {"blending", "mixing", "combining"}, {"gueuze", "lambic", "spontaneous"},
                   {"cherries", "kriek", "fruit"}, {"vinegar", "acetic", "acetobacter"}}}},
        {"equipment", {{{"fermenter", "carboy", "bucket"}, {"airlock", "blowoff", "bubbler"},
                        {"hydrometer", "refractometer", "gravity"}, {"thermometer", "probe", "sensor"},
                        {"siphon", "racking", "cane"}, {"sanitizer", "starsan", "iodophor"},
                        {"chiller", "immersion", "coil"}, {"burner", "stove", "flame"}}}},
        {"styles", {{{"stout", "porter", "dark"}, {"lager", "pilsner", "helles"}, {"ipa", "pale", "hoppy"},
                     {"saison", "farmhouse", "rustic"}, {"dubbel", "tripel", "abbey"},
                     {"weizen", "hefeweizen", "witbier"}, {"barleywine", "wee", "heavy"},
                     {"bock", "doppelbock", "eisbock"}}}},
        {"history", {{{"monks", "monastery", "trappist"}, {"prohibition", "ban", "temperance"},
                      {"brewery", "brewhouse", "microbrewery"}, {"recipe", "formula", "bill"},
                      {"tradition", "heritage", "custom"}, {"tax", "duty", "excise"},
                      {"guild", "association", "society"}, {"century", "era", "period"}}}},
        {"health", {{{"calories", "energy", "kilojoules"}, {"gluten", "celiac", "sorghum"},
                     {"alcohol", "abv", "ethanol"}, {"hangover", "headache", "morning"},
                     {"carbohydrates", "carbs", "starches"}, {"vitamins", "nutrients", "riboflavin"},
                     {"allergy", "reaction", "intolerance"}, {"liver", "organs", "kidneys"}}}},
        {"off-flavors", {{{"skunky", "lightstruck", "sunlight"}, {"oxidation", "cardboard", "stale"},
                          {"infection", "contamination", "spoilage"}, {"sulfur", "eggs", "rotten"},
                          {"solvent", "fusel", "hot"}, {"metallic", "tinny", "iron"},
                          {"astringent", "tannic", "puckering"}, {"medicinal", "phenolic", "plastic"}}}},
        {"aging", {{{"aging", "ageing", "cellaring"}, {"vintage", "year", "release"}, {"oxygen", "air", "headspace"},
                    {"shelf", "lifespan", "freshness"}, {"sediment", "trub", "dregs"},
                    {"clarity", "haze", "cloudiness"}, {"lagering", "coldcrash", "chilling"},
                    {"wax", "seal", "cork"}}}},
        {"tasting", {{{"flavor", "taste", "palate"}, {"mouthfeel", "body", "texture"},
                      {"finish", "aftertaste", "linger"}, {"nuances", "descriptors", "hints"},
                      {"judging", "scoring", "evaluation"}, {"balance", "harmony", "proportion"},
                      {"sample", "flight", "taster"}, {"spices", "coriander", "herbs"}}}},
        {"recipes", {{{"adjuncts", "additions", "extras"}, {"honey", "mead", "nectar"},
                      {"coffee", "espresso", "beans"}, {"chocolate", "cocoa", "cacao"},
                      {"vanilla", "pods", "extract"}, {"lactose", "milk", "cream"}, {"oats", "oatmeal", "flakes"},
                      {"pumpkin", "squash", "gourd"}}}},
        {"cider", {{{"cider", "perry", "scrumpy"}, {"apples", "pears", "orchard"}, {"press", "crusher", "grinder"},
                    {"juice", "must", "wort"}, {"sulfite", "campden", "metabisulfite"},
                    {"sweetener", "sorbate", "backsweetening"}, {"tannins", "bittersweet", "russet"},
                    {"still", "sparkling", "petillant"}}}},
    };
    return list;
}

// {a} and {b} are the title's two concepts. Texts are short on purpose: the default runs
// train several models on two cores, and a step costs what its longest text costs.
const std::vector<const char*> title_templates = {
    "How do I get more {a} from {b}?", "Why does {a} change with {b}?", "Best {a} for {b}?",
    "Does {a} affect {b}?",            "Is {a} normal with {b}?",       "How much {a} for {b}?",
    "What causes {a} with {b}?",       "Can I skip {a} with {b}?",
};

// {b} is the title's second concept, {c} the third, {d} the detail from another topic.
const std::vector<const char*> body_templates = {
    "<p>My {c} seems off &amp; I changed the <em>{d}</em>.</p>",
    "<p>Could the {d} be the reason? My {c} varies.</p>",
    "<p>Notes: <code>{c}</code> fine, {d} odd.</p>",
    "<p>I read {c} matters. Does {d} too?</p>\n<p>Thanks!</p>",
};

// One sentence of an answer about concept {x}.
const std::vector<const char*> answer_sentences = {
    "Check the {x}.",      "Adjust your {x}.",  "The {x} matters most.", "Try another {x}.",
    "It is the {x}.",      "Watch the <strong>{x}</strong>.", "Mind the {x}.", "Change the {x} first.",
};

std::string replace_all(std::string text, const std::string& key, const std::string& value) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
        text.replace(at, key.size(), value);
    return text;
}

// A concept as (topic, concept) indices.
struct ConceptRef {
    int64_t topic = 0;
    int64_t concept_index = 0;
    const char* form(int64_t which) const { return topics()[topic].concepts[concept_index][which]; }
};

// Escapes text for an XML attribute value in double quotes, as the dumps do (newline: &#xA;).
std::string escape_attribute(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\n': out += "&#xA;"; break;
            default: out += c;
        }
    }
    return out;
}

// k distinct values of [0, n), in draw order (a partial Fisher-Yates shuffle).
std::vector<int64_t> pick_distinct(Generator& generator, int64_t n, int64_t k) {
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = i;
    for (int64_t i = 0; i < k; ++i) std::swap(values[static_cast<size_t>(i)],
                                              values[static_cast<size_t>(i + generator.next_index(n - i))]);
    values.resize(static_cast<size_t>(k));
    return values;
}

struct GeneratedAnswer {
    double quality = 0;
    int64_t score = 0;
    std::string body;
};

// An answer of quality `quality` to a question about `concepts` (written in `forms`).
GeneratedAnswer make_answer(Generator& generator, const std::vector<ConceptRef>& concepts,
                            const std::vector<int64_t>& forms, const GeneratedSiteOptions& options) {
    GeneratedAnswer answer;
    answer.quality = generator.next_uniform();
    // Keeps 2 to 4 of the question's concepts (more the better the answer), then adds 1 or 2
    // other concepts of the question's topic.
    int64_t kept = 2 + static_cast<int64_t>(answer.quality * 2.999);
    std::vector<int64_t> order = pick_distinct(generator, static_cast<int64_t>(concepts.size()), kept);
    std::vector<std::string> mentioned;
    for (int64_t position : order) {
        const ConceptRef& concept_ref = concepts[static_cast<size_t>(position)];
        int64_t form = forms[static_cast<size_t>(position)];
        if (generator.next_uniform() < options.paraphrase_probability) form = (form + 1 + generator.next_index(2)) % 3;
        mentioned.push_back(concept_ref.form(form));
    }
    int64_t distractors = 1 + generator.next_index(2);
    for (int64_t added = 0; added < distractors; ++added) {
        ConceptRef other{concepts[0].topic, generator.next_index(8)};
        bool in_question = false;
        for (const ConceptRef& asked : concepts)
            in_question |= asked.topic == other.topic && asked.concept_index == other.concept_index;
        if (!in_question) mentioned.push_back(other.form(generator.next_index(3)));
    }
    // Shuffle what it mentions, then one sentence each, in one or two paragraphs.
    for (size_t i = mentioned.size(); i > 1; --i)
        std::swap(mentioned[i - 1], mentioned[static_cast<size_t>(generator.next_index(static_cast<int64_t>(i)))]);
    answer.body = "<p>";
    for (size_t i = 0; i < mentioned.size(); ++i) {
        if (i > 0) answer.body += (i == 2 ? "</p>\n<p>" : " ");
        const char* sentence = answer_sentences[static_cast<size_t>(
            generator.next_index(static_cast<int64_t>(answer_sentences.size())))];
        answer.body += replace_all(sentence, "{x}", mentioned[i]);
    }
    answer.body += "</p>";
    // Votes follow quality, with noise: a weak answer can end up below zero.
    answer.score = static_cast<int64_t>(std::floor(answer.quality * 12.0 + (generator.next_uniform() - 0.5) * 5.0)) - 2;
    return answer;
}

}  // namespace

std::string generate_posts_xml(const GeneratedSiteOptions& options) {
    NCE_CHECK(options.questions >= 1, "stackexchange: --questions must be at least 1, got {}", options.questions);
    NCE_CHECK(options.max_answers >= 1 && options.max_answers <= 20,
              "stackexchange: --max-answers must be in 1..20, got {}", options.max_answers);
    NCE_CHECK(options.paraphrase_probability >= 0 && options.paraphrase_probability <= 1,
              "stackexchange: paraphrase_probability must be in [0, 1], got {}", options.paraphrase_probability);
    NCE_CHECK(options.accepted_probability >= 0 && options.accepted_probability <= 1,
              "stackexchange: accepted_probability must be in [0, 1], got {}", options.accepted_probability);
    Generator generator(options.seed);
    const int64_t topic_count = static_cast<int64_t>(topics().size());
    std::string xml = "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<posts>\n";
    // A tag wiki, as real dumps have: the reader skips it as another post type.
    xml += "  <row Id=\"1\" PostTypeId=\"4\" Score=\"0\" Body=\"&lt;p&gt;Questions about brewing.&lt;/p&gt;\" />\n";
    int64_t next_id = 2;
    for (int64_t question = 0; question < options.questions; ++question) {
        // The question: three concepts of one topic, one detail concept of another.
        int64_t topic = generator.next_index(topic_count);
        std::vector<ConceptRef> concepts;
        for (int64_t index : pick_distinct(generator, 8, 3)) concepts.push_back({topic, index});
        int64_t detail_topic = (topic + 1 + generator.next_index(topic_count - 1)) % topic_count;
        concepts.push_back({detail_topic, generator.next_index(8)});
        std::vector<int64_t> forms;
        for (size_t i = 0; i < concepts.size(); ++i) forms.push_back(generator.next_index(3));
        auto written = [&](size_t i) { return std::string(concepts[i].form(forms[i])); };
        std::string title = title_templates[static_cast<size_t>(
            generator.next_index(static_cast<int64_t>(title_templates.size())))];
        title = replace_all(replace_all(title, "{a}", written(0)), "{b}", written(1));
        title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
        std::string body = body_templates[static_cast<size_t>(
            generator.next_index(static_cast<int64_t>(body_templates.size())))];
        body = replace_all(replace_all(replace_all(body, "{b}", written(1)), "{c}", written(2)), "{d}", written(3));

        int64_t answer_count = 1 + generator.next_index(options.max_answers);
        std::vector<GeneratedAnswer> answers;
        for (int64_t a = 0; a < answer_count; ++a) answers.push_back(make_answer(generator, concepts, forms, options));
        int64_t question_id = next_id++;
        int64_t first_answer_id = next_id;
        next_id += answer_count;
        size_t best = 0;
        for (size_t a = 1; a < answers.size(); ++a)
            if (answers[a].score > answers[best].score) best = a;
        bool accepted = generator.next_uniform() < options.accepted_probability;
        int64_t question_score = static_cast<int64_t>(generator.next_index(15)) - 1;

        xml += fmt::format("  <row Id=\"{}\" PostTypeId=\"1\"", question_id);
        if (accepted) xml += fmt::format(" AcceptedAnswerId=\"{}\"", first_answer_id + static_cast<int64_t>(best));
        xml += fmt::format(" Score=\"{}\" Body=\"{}\" Title=\"{}\" Tags=\"{}\" AnswerCount=\"{}\" />\n", question_score,
                           escape_attribute(body), escape_attribute(title),
                           escape_attribute(fmt::format("<{}>", topics()[static_cast<size_t>(topic)].tag)), answer_count);
        for (int64_t a = 0; a < answer_count; ++a)
            xml += fmt::format("  <row Id=\"{}\" PostTypeId=\"2\" ParentId=\"{}\" Score=\"{}\" Body=\"{}\" />\n",
                               first_answer_id + a, question_id, answers[static_cast<size_t>(a)].score,
                               escape_attribute(answers[static_cast<size_t>(a)].body + "\n"));
    }
    xml += "</posts>\n";
    return xml;
}

std::string write_generated_site(const std::string& folder, const GeneratedSiteOptions& options) {
    namespace fs = std::filesystem;
    std::string xml = generate_posts_xml(options);
    std::error_code error;
    fs::create_directories(folder, error);
    NCE_CHECK(!error, "stackexchange: cannot create the data folder {}: {}", folder, error.message());
    std::string path = (fs::path(folder) / "Posts.xml").string();
    write_bytes_atomically(path, "stackexchange", xml);
    return path;
}

}  // namespace nce::stackexchange
