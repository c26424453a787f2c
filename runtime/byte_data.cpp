// Reads one rank's shard of the data file with pread and cuts batches from it at the cursor.
#include "runtime/byte_data.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace syncplan {

void require_byte_vocabulary(const ModelSpec& spec) {
  if (spec.vocab_size < kByteVocabulary)
    throw InputError("model " + spec.name + ": vocab_size " + std::to_string(spec.vocab_size) +
                     " is smaller than the 256 byte tokens of the data");
}

ByteShardRange byte_shard_range(std::int64_t file_bytes, int rank, int ranks) {
  SYNCPLAN_CHECK(ranks >= 1 && rank >= 0 && rank < ranks && file_bytes >= 0);
  // floor(r F / N) = r floor(F / N) + floor(r (F mod N) / N): r F itself could pass 2^63, while
  // r (F mod N) < N^2 <= 2^62.
  const std::int64_t whole = file_bytes / ranks, rest = file_bytes % ranks;
  const auto bound = [&](std::int64_t r) { return r * whole + r * rest / ranks; };
  return {bound(rank), bound(rank + 1) - bound(rank)};
}

namespace {

[[noreturn]] void cannot_read(const std::string& path, const std::string& reason) {
  throw InputError(path + ": cannot read file (" + reason + ")");
}

// Closes the descriptor on every path out of the constructor.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

ByteShard::ByteShard(const std::string& path, int rank, int ranks, std::int64_t batch, std::int64_t seq)
    : rank_(rank), batch_(batch), seq_(seq) {
  if (batch < 1) throw InputError("batch: must be >= 1, got " + std::to_string(batch));
  if (seq < 1) throw InputError("seq: must be >= 1, got " + std::to_string(seq));
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw InputError("rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " ranks: no such shard");
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) cannot_read(path, std::strerror(errno));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) cannot_read(path, std::strerror(errno));
  if (!S_ISREG(info.st_mode)) cannot_read(path, "not a regular file");
  const std::int64_t file_bytes = info.st_size;

  // The window of one batch must fit in every shard; the shortest is the first of floor length.
  if (batch > (INT64_MAX - 1) / seq) throw InputError("batch x seq: " + std::to_string(batch) + " x " +
                                                      std::to_string(seq) + " overflows");
  const std::int64_t window = batch * seq + 1;
  for (int r = 0; r < ranks; ++r) {
    const ByteShardRange shard = byte_shard_range(file_bytes, r, ranks);
    if (shard.bytes >= window) continue;
    throw InputError(path + ": " + std::to_string(file_bytes) + " bytes in " + std::to_string(ranks) +
                     " shards: rank " + std::to_string(r) + "'s shard (bytes " + std::to_string(shard.begin_byte) +
                     ".." + std::to_string(shard.begin_byte + shard.bytes) + ") has " + std::to_string(shard.bytes) +
                     " bytes, fewer than batch x seq + 1 = " + std::to_string(batch) + " x " + std::to_string(seq) +
                     " + 1 = " + std::to_string(window));
  }

  range_ = byte_shard_range(file_bytes, rank, ranks);
  bytes_.resize(static_cast<std::size_t>(range_.bytes));
  std::size_t done = 0;
  while (done < bytes_.size()) {
    const ssize_t got = ::pread(file.fd, bytes_.data() + done, bytes_.size() - done,
                                static_cast<off_t>(range_.begin_byte) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) cannot_read(path, std::strerror(errno));
    if (got == 0) cannot_read(path, "it became shorter while being read");
    done += static_cast<std::size_t>(got);
  }
}

ByteBatch ByteShard::next() {
  const std::int64_t tokens = batch_ * seq_;
  if (cursor_ + tokens + 1 > range_.bytes) cursor_ = 0;
  ByteBatch out;
  out.ids.resize(static_cast<std::size_t>(tokens));
  out.targets.resize(static_cast<std::size_t>(tokens));
  const unsigned char* window = bytes_.data() + cursor_;
  for (std::int64_t t = 0; t < tokens; ++t) {
    out.ids[static_cast<std::size_t>(t)] = window[t];
    out.targets[static_cast<std::size_t>(t)] = window[t + 1];
  }
  cursor_ += tokens;
  return out;
}

void ByteShard::set_cursor(std::int64_t cursor) {
  if (cursor < 0 || cursor >= range_.bytes)
    throw InputError("data cursor " + std::to_string(cursor) + " outside rank " + std::to_string(rank_) +
                     "'s shard of " + std::to_string(range_.bytes) + " bytes");
  cursor_ = cursor;
}

}  // namespace syncplan
