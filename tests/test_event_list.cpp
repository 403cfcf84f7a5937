// The lists of events that buffers keep of their readers and writers
// (backend/event.hpp): duplicates kept once, events known to have finished
// without error dropped, no device asked when adding, failures kept, and a
// long-lived buffer's list of readers as long as the reads still running,
// however many there were.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "backend/event.hpp"

// Last: cmocka's macros (fail, ...) would clash with the C++ headers.
extern "C" {
#include <cmocka.h>
}

using namespace spmd;

namespace {

// An event the device is asked about when done() runs, as a CUDA event is:
// it completes when asked once `finished` is set.
class AskedEvent final : public Event {
 public:
  bool finished = false;
  mutable int asked = 0;

 protected:
  void try_settle() const override {
    ++asked;
    if (finished) const_cast<AskedEvent *>(this)->complete();
  }
  void settle() const override { const_cast<AskedEvent *>(this)->complete(); }
};

// Events of work queued on one stream, as CUDA's are: a record known to
// be behind the stream's highest record seen finished completes without a
// question; one ahead of it costs a question (`asked`), whose answer, when
// finished, makes every earlier record known.
struct Stream {
  uint64_t finished_through = 0;  // what the device has done
  uint64_t known_through = 0;     // what an answer has told
  long asked = 0;
};

class StreamRecord final : public Event {
 public:
  StreamRecord(Stream &s, uint64_t number) : stream_(s), number_(number) {}

 protected:
  void try_settle() const override {
    if (number_ > stream_.known_through) {
      ++stream_.asked;
      if (number_ > stream_.finished_through) return;
      stream_.known_through = number_;
    }
    const_cast<StreamRecord *>(this)->complete();
  }
  void settle() const override { const_cast<StreamRecord *>(this)->complete(); }

 private:
  Stream &stream_;
  uint64_t number_;
};

void an_event_is_kept_once(void **) {
  EventList list;
  auto e = std::make_shared<AskedEvent>();
  list.add(e);
  list.add(e);
  list.add(e);
  assert_int_equal(list.events().size(), 1);
}

void finished_events_are_not_kept_and_failures_are(void **) {
  EventList list;
  auto ok = std::make_shared<Event>();
  ok->complete();
  auto failed = std::make_shared<Event>();
  failed->complete(SPMD_ERR_INTERNAL, "device 3: kernel failed");
  list.add(ok);
  list.add(ok);
  list.add(failed);
  list.add(nullptr);
  assert_int_equal(list.events().size(), 1);
  assert_ptr_equal(list.events()[0].get(), failed.get());
}

void adding_an_event_asks_no_device(void **) {
  EventList list;
  auto e = std::make_shared<AskedEvent>();
  e->finished = true;  // finished, but nobody has asked yet
  list.add(e);
  list.add(std::make_shared<AskedEvent>());
  assert_int_equal(e->asked, 0);
  assert_int_equal(list.events().size(), 2);
}

void a_buffer_read_many_times_remembers_only_the_reads_still_running(void **) {
  EventList reads;
  std::vector<std::shared_ptr<AskedEvent>> all;
  for (int i = 0; i < 100000; ++i) {
    auto e = std::make_shared<AskedEvent>();
    all.push_back(e);
    reads.add(e);
    // The reads finish a few steps behind.
    if (i >= 3) all[static_cast<size_t>(i - 3)]->finished = true;
    assert_true(reads.events().size() <= 64);
  }
  long asked = 0;
  for (const auto &e : all) asked += e->asked;
  // Each event is asked a bounded number of times on average.
  assert_true(asked <= 3L * static_cast<long>(all.size()));
  // The reads still running are kept.
  for (size_t i = all.size() - 3; i < all.size(); ++i) {
    bool kept = false;
    for (const auto &e : reads.events()) kept = kept || e.get() == all[i].get();
    assert_true(kept);
  }
}

// A weight read by every op on a stream that runs far behind the host
// (a GPU with a thousand ops queued): the list drops what has finished
// asking the device about a few of its reads, not about each.
void reads_on_a_stream_behind_the_host_are_pruned_with_few_questions(void **) {
  Stream stream;
  EventList reads;
  const uint64_t ops = 100000;
  for (uint64_t i = 1; i <= ops; ++i) {
    reads.add(std::make_shared<StreamRecord>(stream, i));
    // The device is 500 ops behind.
    if (i > 500) stream.finished_through = i - 500;
    assert_true(reads.events().size() <= 2048);
  }
  // Each record asked once would be 100,000 questions.
  if (stream.asked > static_cast<long>(ops / 20))
    fail_msg("%ld questions for %llu reads", stream.asked, static_cast<unsigned long long>(ops));
  // Nothing still running was dropped.
  assert_true(reads.events().size() >= 500);
}

void open_events_are_never_dropped(void **) {
  EventList reads;
  std::vector<std::shared_ptr<AskedEvent>> all;
  for (int i = 0; i < 1000; ++i) {
    all.push_back(std::make_shared<AskedEvent>());
    reads.add(all.back());
  }
  assert_int_equal(reads.events().size(), 1000);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_event_is_kept_once),
      cmocka_unit_test(finished_events_are_not_kept_and_failures_are),
      cmocka_unit_test(adding_an_event_asks_no_device),
      cmocka_unit_test(a_buffer_read_many_times_remembers_only_the_reads_still_running),
      cmocka_unit_test(reads_on_a_stream_behind_the_host_are_pruned_with_few_questions),
      cmocka_unit_test(open_events_are_never_dropped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
