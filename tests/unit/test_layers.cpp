// SPDX-License-Identifier: MIT
// The include graph against the layer order the README states: a file in src/<folder> (or
// apps/) may include only its own folder and folders listed before it, so the arrows point
// down and no two folders include each other. Read from the sources themselves, so a new
// upward include fails here, naming the file, the line and both layers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// The README's "Layers, lowest first: `core`, `data`, ..." line, as folder names.
std::vector<std::string> readme_layers() {
  std::ifstream in(std::string(FSDP_SOURCE_DIR) + "/README.md");
  std::string line;
  const std::string mark = "Layers, lowest first:";
  while (std::getline(in, line)) {
    const auto at = line.find(mark);
    if (at == std::string::npos) continue;
    std::vector<std::string> out;
    const std::regex name("`([a-z_]+)`");
    const std::string rest = line.substr(at + mark.size());
    for (std::sregex_iterator it(rest.begin(), rest.end(), name), end; it != end; ++it)
      out.push_back((*it)[1]);
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("includes point down the README's layer order", "[layers]") {
  const std::vector<std::string> layers = readme_layers();
  REQUIRE(layers.size() >= 5);  // the README line was found and read
  std::map<std::string, int> rank;
  for (std::size_t i = 0; i < layers.size(); ++i) rank[layers[i]] = int(i);
  REQUIRE(rank.count("apps"));

  const fs::path root(FSDP_SOURCE_DIR);
  for (const auto& e : fs::directory_iterator(root / "src"))
    if (e.is_directory()) {
      INFO("src/" << e.path().filename().string() << " is not in the README's layer list");
      CHECK(rank.count(e.path().filename().string()));
    }

  const std::regex include_re(R"(^\s*#\s*include\s*"([a-z_]+)/)");
  int files = 0, includes = 0;
  std::vector<std::string> bad;
  for (const fs::path& top : {root / "src", root / "apps"})
    for (const auto& e : fs::recursive_directory_iterator(top)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      const fs::path rel = fs::relative(e.path(), root);
      const std::string from = *rel.begin() == "apps" ? "apps" : (++rel.begin())->string();
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        ++includes;
        const std::string to = m[1];
        if (!rank.count(to) || !rank.count(from) || rank[to] > rank[from])
          bad.push_back(rel.string() + ":" + std::to_string(n) + ": " + from + " includes " + to);
      }
    }
  INFO(files << " files, " << includes << " project includes");
  std::ostringstream all;
  for (const std::string& b : bad) all << b << "\n";
  INFO("upward includes:\n" << all.str());
  CHECK(files > 100);
  CHECK(bad.empty());
}
