// The training data of `syncplan run`: a text file as byte tokens (vocabulary 256), cut into one
// contiguous shard per rank, read in batches at a cursor that a checkpoint saves and restores.
#pragma once

#include "model/model_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace syncplan {

/// Byte tokens: every byte value 0..255 is one token id.
inline constexpr std::int64_t kByteVocabulary = 256;

/// Throws InputError "model NAME: vocab_size V is smaller than the 256 byte tokens of the data"
/// when the model cannot embed every byte.
void require_byte_vocabulary(const ModelSpec& spec);

/// One rank's part of the file: bytes [begin_byte, begin_byte + bytes).
struct ByteShardRange {
  std::int64_t begin_byte = 0;  ///< offset of the shard's first byte in the file
  std::int64_t bytes = 0;       ///< the shard's length (bytes)
};

/// Shard `rank` of `ranks` (0 <= rank < ranks) of a file of `file_bytes` bytes: bytes
/// [floor(r F / N), floor((r + 1) F / N)), so the shards are contiguous, cover the file and differ
/// in length by at most one byte.
ByteShardRange byte_shard_range(std::int64_t file_bytes, int rank, int ranks);

/// One batch: `batch` sequences of `seq` tokens, flattened (t = b seq + s), as CpuGraph::set_batch
/// takes them: ids[t] is a byte of the shard and targets[t] the byte after it.
struct ByteBatch {
  std::vector<std::int64_t> ids;      ///< [batch x seq] token ids in [0, 256)
  std::vector<std::int64_t> targets;  ///< [batch x seq] the next byte of each id
};

/// Rank `rank`'s shard of a text file, read once, and a cursor into it. A batch is the window of
/// batch x seq + 1 bytes at the cursor (sequence b takes window bytes b seq .. b seq + seq, the
/// last one only as the target of its last id), after which the cursor advances by batch x seq;
/// when the window would pass the shard's end, the cursor first wraps to 0. This is llm.c's data
/// loader (train_gpt2.c, dataloader_next_batch) on bytes. Deterministic: the same shard, cursor and
/// shape give the same batch.
class ByteShard {
 public:
  /// Reads shard `rank` of `ranks` (byte_shard_range) of the file at `path`. Throws InputError
  /// "PATH: cannot read file (REASON)" when it is missing, unreadable or not a regular file, and
  /// "PATH: F bytes in N shards: rank R's shard (bytes A..B) has L bytes, fewer than batch x seq + 1
  /// = W" when the shortest shard (the same one on every rank, so every rank refuses alike) is
  /// shorter than one window; InputError for batch or seq < 1 or ranks < 1.
  ByteShard(const std::string& path, int rank, int ranks, std::int64_t batch, std::int64_t seq);

  /// The batch at the cursor, then the cursor advances (see the class comment).
  ByteBatch next();

  /// Where the next batch starts (before wrapping), in [0, shard bytes).
  std::int64_t cursor() const { return cursor_; }
  /// Restores a saved cursor. Throws InputError "data cursor C outside rank R's shard of L bytes"
  /// when it is not in [0, shard bytes).
  void set_cursor(std::int64_t cursor);

  const ByteShardRange& range() const { return range_; }
  std::int64_t batch() const { return batch_; }
  std::int64_t seq() const { return seq_; }

 private:
  std::vector<unsigned char> bytes_;
  ByteShardRange range_;
  int rank_ = 0;
  std::int64_t batch_ = 0, seq_ = 0, cursor_ = 0;
};

}  // namespace syncplan
