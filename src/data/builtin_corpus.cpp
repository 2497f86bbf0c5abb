// SPDX-License-Identifier: MIT
// The grammar behind the builtin corpus: paragraphs about a recurring character, with tense,
// subject-verb agreement, dialogue and punctuation. The vocabulary is small on purpose: a byte
// model that has learned the words and their order should be far below ln(256) nats per byte.
#include "data/builtin_corpus.hpp"

#include <cctype>
#include <cstdint>

#include "data/data_error.hpp"
#include "data/hash.hpp"

namespace fsdp {
namespace {

struct Noun {
  const char* one;
  const char* many;
};
struct Verb {
  const char* base;
  const char* third;  // third person singular present
  const char* past;
};
struct Name {
  const char* name;
  bool she;
};

const Name kNames[] = {{"Mara", true}, {"Tobin", false}, {"Elsa", true}, {"Odo", false},
                       {"Wren", true}, {"Pell", false},  {"Juna", true}, {"Corin", false},
                       {"Ilse", true}, {"Bram", false}};
const Noun kPeople[] = {{"baker", "bakers"},     {"miller", "millers"}, {"sailor", "sailors"},
                        {"child", "children"},   {"weaver", "weavers"}, {"farmer", "farmers"},
                        {"teacher", "teachers"}, {"fox", "foxes"},      {"heron", "herons"},
                        {"goat", "goats"},       {"dog", "dogs"},       {"stranger", "strangers"}};
const Noun kThings[] = {{"lantern", "lanterns"}, {"boat", "boats"},    {"letter", "letters"},
                        {"key", "keys"},         {"map", "maps"},      {"basket", "baskets"},
                        {"bell", "bells"},       {"coat", "coats"},    {"loaf", "loaves"},
                        {"rope", "ropes"},       {"box", "boxes"},     {"apple", "apples"},
                        {"net", "nets"},         {"candle", "candles"}};
const char* const kPlaces[] = {"river",  "garden", "mill",    "bridge", "market", "hill",  "harbor",
                               "church", "forest", "kitchen", "road",   "well",   "field", "tower"};
const char* const kAdjectives[] = {"old",     "quiet",  "small",  "bright", "tired", "green",
                                   "narrow",  "heavy",  "gentle", "silver", "cold",  "clever",
                                   "patient", "broken", "warm",   "little", "red",   "empty"};
const Verb kTransitive[] = {{"carry", "carries", "carried"},   {"find", "finds", "found"},
                            {"mend", "mends", "mended"},       {"watch", "watches", "watched"},
                            {"paint", "paints", "painted"},    {"hide", "hides", "hid"},
                            {"follow", "follows", "followed"}, {"open", "opens", "opened"},
                            {"lose", "loses", "lost"},         {"build", "builds", "built"},
                            {"sell", "sells", "sold"},         {"bring", "brings", "brought"},
                            {"clean", "cleans", "cleaned"},    {"want", "wants", "wanted"}};
const Verb kIntransitive[] = {{"sleep", "sleeps", "slept"},      {"wait", "waits", "waited"},
                              {"sing", "sings", "sang"},         {"walk", "walks", "walked"},
                              {"laugh", "laughs", "laughed"},    {"rest", "rests", "rested"},
                              {"wander", "wanders", "wandered"}, {"listen", "listens", "listened"},
                              {"work", "works", "worked"},       {"run", "runs", "ran"}};
const char* const kPrepositions[] = {"by", "in",     "near",   "under",  "at",
                                     "on", "behind", "across", "beside", "past"};
const char* const kTimes[] = {"in the morning",  "at dawn",        "after supper",
                              "every winter",    "on Sunday",      "later that night",
                              "before the rain", "in the evening", "at noon",
                              "that summer",     "the next day",   "once"};
const char* const kAdverbs[] = {"slowly",  "quietly",   "again",  "together",
                                "at once", "with care", "all day"};
const char* const kConjunctions[] = {"and", "but", "so", "while", "because"};
const char* const kPluralCounts[] = {"the", "some", "two", "three", "many"};

// Appends words with the spacing and capitalisation of ordinary prose.
class Writer {
 public:
  explicit Writer(std::uint64_t seed) : state_(seed) {}

  std::string run(std::size_t target_bytes) {
    out_.reserve(target_bytes + 4096);
    while (out_.size() < target_bytes) paragraph();
    return out_;
  }

 private:
  std::uint64_t next() { return mix64(state_++); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  template <typename T, std::size_t N>
  const T& pick(const T (&list)[N]) {
    return list[next() % N];
  }

  void word(const std::string& w) {
    if (space_) out_ += ' ';
    const std::size_t at = out_.size();
    out_ += w;
    if (capital_) out_[at] = char(std::toupper(static_cast<unsigned char>(out_[at])));
    capital_ = false;
    space_ = true;
  }
  void punct(const char* p) { out_ += p; }
  void open_quote() {
    if (space_) out_ += ' ';
    out_ += '"';
    space_ = false;
    capital_ = true;
  }
  void end_sentence(const char* p) {
    out_ += p;
    capital_ = true;
  }

  void paragraph() {
    hero_ = &pick(kNames);
    past_ = chance(0.7);
    named_ = false;
    const int sentences = 2 + int(next() % 5);
    for (int i = 0; i < sentences; ++i) sentence();
    out_ += "\n\n";
    space_ = false;
    capital_ = true;
  }

  void sentence() {
    const double r = uniform();
    if (r < 0.35) {
      transitive_clause(true);
      end_sentence(".");
    } else if (r < 0.55) {
      intransitive_clause();
      end_sentence(".");
    } else if (r < 0.70) {
      transitive_clause(false);
      punct(",");
      word(pick(kConjunctions));
      if (chance(0.5))
        intransitive_clause();
      else
        transitive_clause(false);
      end_sentence(".");
    } else if (r < 0.80) {
      word(past_ ? "there was" : "there is");
      singular_phrase(pick(kThings).one, false);
      place();
      end_sentence(".");
    } else if (r < 0.90) {
      question();
    } else {
      report();
    }
  }

  // Returns true when the subject is plural, for agreement in the present tense.
  bool subject() {
    const double r = uniform();
    if (!named_ || r < 0.3) {
      word(hero_->name);
      named_ = true;
      return false;
    }
    if (r < 0.55) {
      word(hero_->she ? "she" : "he");
      return false;
    }
    const Noun& n = pick(kPeople);
    if (chance(0.35)) {
      plural_phrase(n.many);
      return true;
    }
    singular_phrase(n.one, false);
    return false;
  }

  void verb(const Verb& v, bool plural) { word(past_ ? v.past : plural ? v.base : v.third); }

  void singular_phrase(const char* noun, bool possessive_ok) {
    const double r = uniform();
    const bool adjective = chance(0.4);
    const char* adj = adjective ? pick(kAdjectives) : nullptr;
    if (possessive_ok && r < 0.15) {
      word(hero_->she ? "her" : "his");
    } else if (r < 0.4) {
      const char first = adjective ? adj[0] : noun[0];
      const bool vowel =
          first == 'a' || first == 'e' || first == 'i' || first == 'o' || first == 'u';
      word(vowel ? "an" : "a");
    } else {
      word("the");
    }
    if (adjective) word(adj);
    word(noun);
  }

  void plural_phrase(const char* noun) {
    word(pick(kPluralCounts));
    if (chance(0.3)) word(pick(kAdjectives));
    word(noun);
  }

  void object() {
    const Noun& n = pick(kThings);
    if (chance(0.25))
      plural_phrase(n.many);
    else
      singular_phrase(n.one, true);
  }

  void place() {
    word(pick(kPrepositions));
    word("the");
    if (chance(0.25)) word(pick(kAdjectives));
    word(pick(kPlaces));
  }

  void transitive_clause(bool extras) {
    if (extras && chance(0.25)) {
      word(pick(kTimes));
      punct(",");
    }
    verb(pick(kTransitive), subject());
    object();
    if (extras && chance(0.5)) place();
    if (extras && chance(0.2)) word(pick(kAdverbs));
  }

  void intransitive_clause() {
    verb(pick(kIntransitive), subject());
    if (chance(0.6)) place();
    if (chance(0.3)) word(pick(kTimes));
  }

  void speaker() {
    if (chance(0.6)) {
      word(hero_->name);
      named_ = true;
    } else {
      singular_phrase(pick(kPeople).one, false);
    }
  }

  // "Where is the old key?" asked the baker.
  void question() {
    open_quote();
    const Noun& n = pick(kThings);
    switch (next() % 3) {
      case 0:
        word("where is the");
        word(n.one);
        break;
      case 1:
        word("did you see the");
        word(n.one);
        break;
      default:
        word("who");
        word(pick(kTransitive).past);
        word("the");
        word(n.many);
        break;
    }
    punct("?\"");
    space_ = true;
    word("asked");
    speaker();
    end_sentence(".");
  }

  // "I found a rope by the well," said Mara.
  void report() {
    open_quote();
    word("I");
    word(pick(kTransitive).past);
    object();
    if (chance(0.5)) place();
    punct(",\"");
    space_ = true;
    word("said");
    speaker();
    end_sentence(".");
  }

  std::uint64_t state_;
  std::string out_;
  const Name* hero_ = nullptr;
  bool past_ = true;
  bool named_ = false;
  bool space_ = false;
  bool capital_ = true;
};

}  // namespace

const std::string& builtin_corpus(const std::string& which) {
  // Function-local statics: built on first use, once, and safely under concurrent first use.
  if (which == "train") {
    static const std::string train = Writer(0x7261696e2d303031ULL).run(1000000);
    return train;
  }
  if (which == "val") {
    static const std::string val = Writer(0x76616c2d2d303032ULL).run(100000);
    return val;
  }
  throw DataError("builtin:" + which + ": unknown builtin corpus (expected train or val)");
}

}  // namespace fsdp
