// SPDX-License-Identifier: MIT
// Property tests of the code that decides which files a run may write or remove: checkpoint
// retention (io/checkpoint_dir.hpp) over random directories and random histories of saves,
// resumes and foreign files, and the output-path rules (io/output_path.hpp) over random files
// on disk; plus the deck comparison and the one-line error text.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "config/deck_agreement.hpp"
#include "core/check.hpp"
#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_format.hpp"
#include "io/atomic_output.hpp"
#include "io/metrics.hpp"
#include "io/output_path.hpp"

using namespace fsdp;
using ckpt::DirFile;
namespace fs = std::filesystem;

namespace {

const std::string kA = "00000000000000aa", kB = "00000000000000bb";

DirFile complete(std::int64_t step, const std::string& run, std::int64_t written) {
  DirFile f;
  f.name = ckpt::file_name(step);
  f.kind = DirFile::Complete;
  f.step = step;
  f.run = run;
  f.written = written;
  return f;
}

}  // namespace

TEST_CASE("checkpoint names: parsed without overflow, partial names carry their run") {
  DirFile f;
  REQUIRE(ckpt::parse_name("step_000012.h5", f));
  CHECK(f.step == 12);
  CHECK(f.kind == DirFile::Complete);
  REQUIRE(ckpt::parse_name(ckpt::partial_name(ckpt::file_name(7), kA), f));
  CHECK((f.kind == DirFile::Partial && f.step == 7 && f.run == kA));
  REQUIRE(ckpt::parse_name(ckpt::run_file_name(7, kA), f));  // step_000007.<run>.h5
  CHECK((f.kind == DirFile::Complete && f.step == 7 && f.run.empty()));  // owner: its attribute
  REQUIRE(ckpt::parse_name(ckpt::partial_name(ckpt::run_file_name(7, kA), kA), f));
  CHECK((f.kind == DirFile::Partial && f.run == kA));
  CHECK_FALSE(ckpt::parse_name("step_99999999999999999999.h5", f));  // 20 digits
  CHECK(ckpt::parse_name("step_999999999999999999.h5", f));          // 18 fit
  for (const char* bad : {"step_.h5", "step_12.h5.tmp", "step_1x.h5", "xstep_1.h5", "step_1.h5.zz.tmp",
                          "step_1.h5.0000000000000aaz.tmp", "latest", ".fsdp-lock", "step_1.h55"})
    CHECK_FALSE(ckpt::parse_name(bad, f));
}

TEST_CASE("retention: random directories never lose a protected, foreign or unknown file") {
  std::mt19937_64 rng(20261201);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<DirFile> files;
    std::set<std::string> names;
    const int n = int(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const std::string run = std::vector<std::string>{kA, kA, kB, ""}[rng() % 4];
      DirFile f = complete(std::int64_t(rng() % 30), run, std::int64_t(rng() % 1000));
      if (run != "" && rng() % 4 == 0) {
        f.kind = DirFile::Partial;
        f.name = ckpt::partial_name(ckpt::file_name(f.step), run);
      }
      if (names.insert(f.name).second) files.push_back(f);
    }
    std::vector<std::string> protect;
    for (const DirFile& f : files)
      if (rng() % 5 == 0) protect.push_back(f.name);
    if (rng() % 3 == 0) protect.push_back(ckpt::file_name(99));  // a name that is not there
    const int keep = 1 + int(rng() % 4);
    const std::vector<std::string> victims = ckpt::retention_victims(files, kA, keep, protect);

    std::map<std::string, DirFile> by_name;
    for (const DirFile& f : files) by_name[f.name] = f;
    const std::set<std::string> gone(victims.begin(), victims.end());
    CHECK(gone.size() == victims.size());
    for (const std::string& v : victims) {
      REQUIRE(by_name.count(v));
      CHECK(by_name[v].run == kA);  // only the run's own files
      CHECK(std::find(protect.begin(), protect.end(), v) == protect.end());
    }
    // What stays of the run's complete files: the `keep` written last (protected or not) and
    // every protected one besides.
    std::vector<DirFile> mine;
    for (const DirFile& f : files) {
      if (f.run != kA) continue;
      const bool prot = std::find(protect.begin(), protect.end(), f.name) != protect.end();
      if (f.kind == DirFile::Partial) {
        CHECK(gone.count(f.name) == (prot ? 0u : 1u));
        continue;
      }
      mine.push_back(f);
    }
    std::sort(mine.begin(), mine.end(), [](const DirFile& a, const DirFile& b) {
      return a.written != b.written ? a.written > b.written : a.step > b.step;
    });
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const bool prot = std::find(protect.begin(), protect.end(), mine[i].name) != protect.end();
      CHECK(gone.count(mine[i].name) == (i < std::size_t(keep) || prot ? 0u : 1u));
    }
    // The order of the listing does not matter.
    std::shuffle(files.begin(), files.end(), rng);
    std::vector<std::string> again = ckpt::retention_victims(files, kA, keep, protect);
    CHECK(std::set<std::string>(again.begin(), again.end()) == gone);
  }
}

TEST_CASE("retention: random histories keep latest, the file just written and the resumed-from") {
  // A model of one directory: saves by this run (which may roll back to an older step),
  // another run's files appearing, files of unknown origin. After every save the file just
  // written, the resumed-from file and every file not of this run still exist.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    std::map<std::string, DirFile> dir;
    std::int64_t clock = 0;
    const int keep = 1 + int(rng() % 3);
    std::string resumed;
    std::int64_t step = 0;
    for (int event = 0; event < 25; ++event) {
      const int what = int(rng() % 6);
      if (what == 0) {  // another run (or an unknown writer) leaves a file
        const DirFile f = complete(std::int64_t(rng() % 40), rng() % 2 ? kB : "", ++clock);
        if (!dir.count(f.name)) dir[f.name] = f;
        continue;
      }
      if (what == 1 && !dir.empty()) {  // roll back: resume from one of our files
        std::vector<std::string> ours;
        for (const auto& [n, f] : dir)
          if (f.run == kA && f.kind == DirFile::Complete) ours.push_back(n);
        if (!ours.empty()) {
          resumed = ours[rng() % ours.size()];
          step = dir[resumed].step;
        }
        continue;
      }
      ++step;
      const std::string name = ckpt::file_name(step);
      std::string name_used = name;  // another run's name: this run's own instead (save())
      if (dir.count(name) && dir[name].run != kA) name_used = ckpt::run_file_name(step, kA);
      dir[name_used] = complete(step, kA, ++clock);
      dir[name_used].name = name_used;
      const std::map<std::string, DirFile> before = dir;
      std::vector<DirFile> listing;
      for (const auto& [n, f] : dir) listing.push_back(f);
      for (const std::string& v : ckpt::retention_victims(listing, kA, keep, {name_used, resumed}))
        dir.erase(v);
      REQUIRE(dir.count(name_used));               // `latest` names a file that exists
      if (!resumed.empty()) CHECK(dir.count(resumed));
      for (const auto& [n, f] : before)
        if (f.run != kA) CHECK(dir.count(n));      // nobody else's file is touched
      std::size_t mine = 0;
      for (const auto& [n, f] : dir) mine += f.run == kA;
      CHECK(mine <= std::size_t(keep) + (resumed.empty() ? 0 : 1) + 1);
    }
  }
}

TEST_CASE("output paths: random files on disk are refused unless they are the output's own") {
  const fs::path root = fs::temp_directory_path() / ("fsdp_output_safety_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  const std::string input = (root / "train.bin").string();
  std::ofstream(input) << "tokens";
  std::mt19937_64 rng(11);
  enum Content { Missing, Empty, Metrics, Trace, Hdf5, Binary, Directory, Fifo, DevNull, Input, NoDir,
                 HfConfig, OldMetrics };
  for (int trial = 0; trial < 400; ++trial) {
    const fs::path p = root / "sub" / ("f" + std::to_string(trial));
    const Content c = Content(rng() % 13);
    std::string path = p.string();
    switch (c) {
      case Missing: break;
      case Empty: std::ofstream(p).flush(); break;
      case Metrics: std::ofstream(p) << "{\"fsdp_metrics\": 1, \"step\": 1}\n{\"step\": 2}\n"; break;
      case HfConfig: std::ofstream(p) << "{\n  \"architectures\": [\"LlamaForCausalLM\"]\n}\n"; break;
      case OldMetrics: std::ofstream(p) << "{\"step\": 1}\n"; break;  // no marker: not provably ours
      case Trace: std::ofstream(p) << "{\"traceEvents\":[\n]}\n"; break;
      case Hdf5: std::ofstream(p, std::ios::binary) << std::string("\x89HDF\r\n\x1a\n", 8) << "rest"; break;
      case Binary: std::ofstream(p, std::ios::binary) << std::string("\x7f" "ELF\x02\x01", 6); break;
      case Directory: fs::create_directories(p); break;
      case Fifo: REQUIRE(::mkfifo(p.c_str(), 0600) == 0); break;
      case DevNull: fs::create_symlink("/dev/null", p); break;
      case Input: path = input; break;
      case NoDir: path = (root / "missing" / "m.jsonl").string(); break;
    }
    for (OutputKind kind : {OutputKind::Metrics, OutputKind::Trace}) {
      const std::string why = output_problem("--metrics", path, kind, {input});
      const bool allowed = c == Missing || c == Empty || (c == Metrics && kind == OutputKind::Metrics) ||
                           (c == Trace && kind == OutputKind::Trace);
      INFO("trial " << trial << " content " << int(c) << ": " << why);
      CHECK(why.empty() == allowed);
      if (!why.empty()) {
        CHECK(why.find(path) != std::string::npos);  // names the path
        CHECK(why.find('\n') == std::string::npos);  // one line
      }
    }
  }
  // What a staged OutputFile leaves: the final name only (no temporary beside it), with what
  // was written; append continues it. A live one writes in place.
  const std::string m = (root / "m.jsonl").string();
  {
    OutputFile f("--metrics", m, false);
    f.write("{\"a\":1}\n", true);
    CHECK_FALSE(fs::exists(m));
  }
  CHECK(std::distance(fs::directory_iterator(root), fs::directory_iterator()) == 3);  // sub, train.bin, m
  { OutputFile("--metrics", m, true).write("{\"b\":2}\n", true); }
  std::ifstream in(m);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "{\"a\":1}\n{\"b\":2}\n");
  {
    OutputFile live("--metrics", m, true, OutputFile::Live);
    live.write("{\"c\":3}\n", true);
    std::ifstream now(m);
    const std::string seen((std::istreambuf_iterator<char>(now)), std::istreambuf_iterator<char>());
    CHECK(seen == "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");  // visible before the end
  }
  // A planted link at any temporary name is never written through: the temporary is fresh.
  const std::string target = (root / "target").string(), t = (root / "t.json").string();
  std::ofstream(target) << "precious";
  fs::create_symlink(target, t + ".tmp");
  fs::create_symlink(target, t + ".partial");
  io::write_file_atomically(t, "{}\n");
  std::ifstream tin(target);
  CHECK(std::string((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>()) == "precious");
  // A metrics writer marks a new file's first record, and only that one.
  const std::string mm = (root / "marked.jsonl").string();
  {
    MetricsWriter w(mm);
    w.write({{"step", 1}});
    w.write({{"step", 2}});
  }
  CHECK(output_problem("--metrics", mm, OutputKind::Metrics, {}).empty());
  { MetricsWriter(mm, true).write({{"step", 3}}); }
  std::ifstream min(mm);
  const std::string marked((std::istreambuf_iterator<char>(min)), std::istreambuf_iterator<char>());
  CHECK(marked == "{\"fsdp_metrics\":1,\"step\":1}\n{\"step\":2}\n{\"step\":3}\n");
  fs::remove_all(root);
}

TEST_CASE("decks: the first differing key is named with both values") {
  const std::string a = "# resolved\n[model]\nn_layer = 4\nn_head = 4\n[train]\nsteps = 10\n";
  CHECK(first_difference(a, a, 0, 1).empty());
  std::string b = a;
  b.replace(b.find("n_layer = 4"), 11, "n_layer = 2");
  CHECK(first_difference(a, b, 0, 3) == "model.n_layer is 4 on rank 0 but 2 on rank 3");
  std::string c = a + "[command line]\nresume = auto\n";
  CHECK(first_difference(a, c, 0, 1) == "command line.resume is (absent) on rank 0 but auto on rank 1");
}

TEST_CASE("error text: one bounded line whatever the value") {
  CHECK(one_line("a\nb\tc\x01") == "a\\nb\\tc\\x01");
  const std::string big(50 << 20, 'x');
  const std::string line = one_line("value " + big + " end");
  CHECK(line.size() < 700);
  CHECK(line.find(" end") != std::string::npos);
  CHECK(line.find("bytes]") != std::string::npos);
}
