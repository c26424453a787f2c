// The byte-token data (runtime/byte_data.hpp): shards of a file, batches at a cursor with
// wrap-around, a restored cursor, and the refusals (missing file, a shard shorter than a window);
// on the project's own training text (tests/runtime/data/training.txt, about 10 kB of prose).
#include "core/errors.hpp"
#include "runtime/byte_data.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace syncplan;

namespace {

// A file with `text` in a fresh temporary folder, removed with the object.
struct TextFile {
  std::filesystem::path folder, path;
  explicit TextFile(const std::string& text) {
    char pattern[] = "/tmp/syncplan-byte-data-XXXXXX";
    folder = mkdtemp(pattern);
    path = folder / "data.txt";
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TextFile() { std::filesystem::remove_all(folder); }
};

std::vector<std::int64_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

TEST_CASE("byte shards: floor(r F / N) bounds cover the file, lengths differ by at most one", "[byte_data]") {
  // F = 10, N = 3: bounds 0, 3, 6, 10 (10 / 3 = 3.33, 20 / 3 = 6.67) -> lengths 3, 3, 4.
  CHECK(byte_shard_range(10, 0, 3).begin_byte == 0);
  CHECK(byte_shard_range(10, 0, 3).bytes == 3);
  CHECK(byte_shard_range(10, 1, 3).begin_byte == 3);
  CHECK(byte_shard_range(10, 1, 3).bytes == 3);
  CHECK(byte_shard_range(10, 2, 3).begin_byte == 6);
  CHECK(byte_shard_range(10, 2, 3).bytes == 4);
  // 2^62 bytes in 7 shards: r F would overflow 64 bits; the last bound is F itself.
  const std::int64_t huge = std::int64_t{1} << 62;
  CHECK(byte_shard_range(huge, 6, 7).begin_byte + byte_shard_range(huge, 6, 7).bytes == huge);
}

TEST_CASE("byte batches: ids are the window, targets the next byte; the cursor advances and wraps", "[byte_data]") {
  // "abcdefghij" on 2 ranks: rank 1 reads "fghij". batch 1 x seq 2 -> windows of 3 bytes:
  // cursor 0: ids "fg", targets "gh", cursor 2; cursor 2: "hi" / "ij", cursor 4; cursor 4: 4 + 3 > 5,
  // so it wraps to 0 first: "fg" / "gh" again, cursor 2.
  const TextFile file("abcdefghij");
  ByteShard shard(file.path.string(), 1, 2, 1, 2);
  CHECK(shard.range().begin_byte == 5);
  CHECK(shard.range().bytes == 5);
  ByteBatch batch = shard.next();
  CHECK(batch.ids == bytes_of("fg"));
  CHECK(batch.targets == bytes_of("gh"));
  CHECK(shard.cursor() == 2);
  batch = shard.next();
  CHECK(batch.ids == bytes_of("hi"));
  CHECK(batch.targets == bytes_of("ij"));
  CHECK(shard.cursor() == 4);
  batch = shard.next();
  CHECK(batch.ids == bytes_of("fg"));
  CHECK(shard.cursor() == 2);

  // batch 2 x seq 2 on rank 0 ("abcde"): one window of 5 bytes, sequences "ab" and "cd" with
  // targets "bc" and "de" (flattened t = b seq + s).
  ByteShard two(file.path.string(), 0, 2, 2, 2);
  batch = two.next();
  CHECK(batch.ids == bytes_of("abcd"));
  CHECK(batch.targets == bytes_of("bcde"));
}

TEST_CASE("byte batches: a restored cursor gives the batches that followed it", "[byte_data]") {
  const TextFile file("The quick brown fox jumps over the lazy dog, twice: the quick brown fox.");
  ByteShard first(file.path.string(), 0, 1, 3, 4);
  for (int i = 0; i < 4; ++i) first.next();
  const std::int64_t saved = first.cursor();
  const ByteBatch expected = first.next();
  ByteShard resumed(file.path.string(), 0, 1, 3, 4);
  resumed.set_cursor(saved);
  const ByteBatch batch = resumed.next();
  CHECK(batch.ids == expected.ids);
  CHECK(batch.targets == expected.targets);
  CHECK(resumed.cursor() == first.cursor());
  CHECK_THROWS_WITH(resumed.set_cursor(72), "data cursor 72 outside rank 0's shard of 72 bytes");
  CHECK_THROWS_AS(resumed.set_cursor(-1), InputError);
}

TEST_CASE("byte data: a missing file, a folder and a short shard are refused naming them", "[byte_data]") {
  CHECK_THROWS_WITH(ByteShard("/nonexistent/data.txt", 0, 2, 2, 32),
                    "/nonexistent/data.txt: cannot read file (No such file or directory)");
  CHECK_THROWS_WITH(ByteShard("/tmp", 0, 1, 1, 1), Catch::Contains("/tmp: cannot read file ("));
  // 11 bytes on 2 ranks: shards of 5 (bytes 0..5) and 6; batch 1 x seq 5 needs 6 bytes, so rank
  // 0's shard is short, and rank 1 refuses too, naming rank 0's shard (no rank goes on alone).
  const TextFile file("hello world");
  const std::string expected = file.path.string() +
                               ": 11 bytes in 2 shards: rank 0's shard (bytes 0..5) has 5 bytes, fewer than "
                               "batch x seq + 1 = 1 x 5 + 1 = 6";
  CHECK_THROWS_WITH(ByteShard(file.path.string(), 0, 2, 1, 5), expected);
  CHECK_THROWS_WITH(ByteShard(file.path.string(), 1, 2, 1, 5), expected);
  CHECK_NOTHROW(ByteShard(file.path.string(), 1, 2, 1, 4));
  CHECK_THROWS_WITH(ByteShard(file.path.string(), 0, 1, 0, 4), "batch: must be >= 1, got 0");
  CHECK_THROWS_WITH(ByteShard(file.path.string(), 0, 1, 1, 0), "seq: must be >= 1, got 0");
  const TextFile empty("");
  CHECK_THROWS_WITH(ByteShard(empty.path.string(), 0, 1, 1, 1), Catch::Contains("rank 0's shard (bytes 0..0) has 0 bytes"));
}

TEST_CASE("byte data: the model must embed all 256 bytes", "[byte_data]") {
  ModelSpec spec;
  spec.name = "small-vocab";
  spec.vocab_size = 100;
  CHECK_THROWS_WITH(require_byte_vocabulary(spec),
                    "model small-vocab: vocab_size 100 is smaller than the 256 byte tokens of the data");
  spec.vocab_size = 256;
  CHECK_NOTHROW(require_byte_vocabulary(spec));
}

TEST_CASE("byte data on the training text: each rank's shard is its part of the file, read independently", "[byte_data]") {
  const std::string text_path = SYNCPLAN_TRAINING_TEXT;
  REQUIRE(std::filesystem::is_regular_file(text_path));
  // The independent reading: the whole file through an ifstream, cut at floor(r F / 4).
  std::ifstream in(text_path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto size = static_cast<std::int64_t>(text.size());
  std::int64_t covered = 0;
  for (int rank = 0; rank < 4; ++rank) {
    ByteShard shard(text_path, rank, 4, 2, 32);
    const std::int64_t begin = size * rank / 4;
    CHECK(shard.range().begin_byte == begin);
    CHECK(shard.range().bytes == size * (rank + 1) / 4 - begin);
    covered += shard.range().bytes;
    const ByteBatch batch = shard.next();
    REQUIRE(batch.ids.size() == 64);
    for (std::size_t t = 0; t < 64; ++t) {
      CHECK(batch.ids[t] == static_cast<unsigned char>(text[static_cast<std::size_t>(begin) + t]));
      CHECK(batch.targets[t] == static_cast<unsigned char>(text[static_cast<std::size_t>(begin) + t + 1]));
    }
  }
  CHECK(covered == size);
}
