package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/internal/form"
	"github.com/tether-sh/tether/lib/proc"
)

// sampleRecords are records of every shape a store holds.
func sampleRecords() []ledger.Record {
	code, killed := 0, 137
	t0 := time.Unix(1714557600, 123456789).UTC()
	base := ledger.Record{
		ID: "0dn7yrqdrcn2j-shf3lc", Job: "backup.db:nightly@host-1", Status: ledger.Claimed,
		Owner:     ledger.Owner{Host: "web-1", BootID: "4f8c2e7a-1b2d-4c3e-9f00-0123456789ab", PIDNS: 4026531836, PID: 4242, Start: 987654},
		ClaimedAt: t0,
	}
	fenced := base
	fenced.Source, fenced.Instant, fenced.Fenced, fenced.FencedAt = "cron", time.Unix(1714557600, 0).UTC(), true, t0.Add(time.Second)
	running := fenced
	running.Status, running.StartedAt, running.Child = ledger.Running, t0.Add(2*time.Second), proc.ID{PID: 4243, Start: 987700}
	done := running
	done.Status, done.FinishedAt, done.ExitCode = ledger.Completed, t0.Add(time.Minute), &code
	failed := running
	failed.Status, failed.FinishedAt, failed.ExitCode, failed.Error = ledger.Failed, t0.Add(time.Hour), &killed, "killed by signal TERM after 5s"
	unknownOwner := base
	unknownOwner.Owner = ledger.Owner{PID: 1}
	noPIDNS := running // as written before PID namespaces were recorded
	noPIDNS.Owner.PIDNS = 0
	beaten := running
	beaten.BeatAt, beaten.Note = t0.Add(30*time.Second), "stalled:idle"
	beatenDone := done
	beatenDone.BeatAt = t0.Add(50 * time.Second)
	return []ledger.Record{base, fenced, running, done, failed, unknownOwner, noPIDNS, beaten, beatenDone}
}

// TestCanonicalCodec checks that records of every shape are written and
// read by the canonical codec (not encoding/json), byte for byte as
// encoding/json writes them, and read back to the same record; and that a
// record with text the codec does not take still round-trips.
func TestCanonicalCodec(t *testing.T) {
	recs := sampleRecords()
	odd := recs[4]
	odd.Source, odd.Error = "café <ops> & \"friends\"\n", "tab\there \\ \u2028"
	for i, r := range append(recs, odd) {
		j := r.Form()
		j.V = recordFormat
		want, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := form.AppendCanonical(nil, &j)
		if plainRecord := i < len(recs); ok != plainRecord {
			t.Errorf("form.AppendCanonical(record %d) ok = %v; want %v", i, ok, plainRecord)
		}
		if ok && !bytes.Equal(got, want) {
			t.Errorf("form.AppendCanonical(record %d) =\n%s\nwant (json.Marshal)\n%s", i, got, want)
		}
		if enc := Encode(r); !bytes.Equal(enc, append(want, '\n')) {
			t.Errorf("record %d Encode() =\n%s\nwant\n%s", i, enc, want)
		}
		if _, ok := readCanonical(Encode(r)); ok != (i < len(recs)) {
			t.Errorf("readCanonical(record %d) ok = %v; want %v", i, ok, i < len(recs))
		}
		back, err := Decode(Encode(r), r.ID)
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("Decode(encode(record %d)) = %+v, %v; want %+v", i, back, err, r)
		}
		out, _ := r.MarshalJSON()
		j.V = 0
		want, _ = json.Marshal(j)
		// The store's keys the file store keeps no value for follow.
		want = append(want[:len(want)-1], `,"lease_until":null,"late":null}`...)
		if !bytes.Equal(out, want) {
			t.Errorf("record %d MarshalJSON =\n%s\nwant\n%s", i, out, want)
		}
	}
}

// TestCanonicalDecodeOlderRecord: a record written before owners carried
// "pidns" is still read by the canonical codec, as encoding/json reads it:
// with no PID namespace.
func TestCanonicalDecodeOlderRecord(t *testing.T) {
	old := []byte(`{"v":1,"id":"0dn7yrqdrcn2j-shf3lc","job":"backup","source":null,"instant":null,"status":"running",` +
		`"fenced":false,"fenced_at":null,"owner":{"host":"web-1","boot_id":"4f8c2e7a-1b2d-4c3e-9f00-0123456789ab","pid":4242,"start":987654},` +
		`"child":{"pid":4243,"start":987700},"claimed_at":"2024-05-01T10:00:00Z","started_at":"2024-05-01T10:00:01Z",` +
		`"finished_at":null,"exit_code":null,"error":null}` + "\n")
	j, ok := readCanonical(old)
	if !ok {
		t.Fatalf("readCanonical(%s) ok = false; want true", old)
	}
	if j.Owner == nil || j.Owner.PIDNS != nil || j.Owner.PID != 4242 {
		t.Errorf("readCanonical(%s) owner = %+v; want pid 4242 and no pidns", old, j.Owner)
	}
	r, err := Decode(old, "0dn7yrqdrcn2j-shf3lc")
	if err != nil || r.Owner.PIDNS != 0 || r.Owner.Start != 987654 {
		t.Fatalf("Decode(%s) = %+v, %v; want owner 4242@987654 with no PID namespace", old, r.Owner, err)
	}
	if !r.BeatAt.IsZero() || r.Note != "" || j.BeatAt != nil || j.Note != nil {
		t.Errorf("Decode(%s) beat = %v %q; want none (written before beats)", old, r.BeatAt, r.Note)
	}
	// Rewritten, it carries pidns null: every key always present.
	if enc := Encode(r); !bytes.Contains(enc, []byte(`"boot_id":"4f8c2e7a-1b2d-4c3e-9f00-0123456789ab","pidns":null,"pid":4242`)) {
		t.Errorf("encode(Decode(older record)) = %s; want \"pidns\":null", enc)
	}
	if enc := Encode(r); !bytes.HasSuffix(enc, []byte(`"error":null,"beat_at":null,"note":null,"schedule":null,"attempt":null,"attempts":null}`+"\n")) {
		t.Errorf("encode(Decode(older record)) = %s; want \"beat_at\":null,\"note\":null", enc)
	}
}

// FuzzCanonicalDecode: whatever readCanonical accepts, encoding/json reads
// to the same values.
func FuzzCanonicalDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(Encode(r))
	}
	f.Add([]byte(`{"v":1,"id":"a","job":"j","source":null,"instant":null,"status":"claimed","fenced":false,"fenced_at":null,"owner":{"host":null,"boot_id":null,"pid":-0,"start":0},"child":null,"claimed_at":null,"started_at":null,"finished_at":null,"exit_code":-1,"error":""}`))
	f.Add([]byte(`{"v":1,"id":"a","job":"j","source":null,"instant":null,"status":"claimed","fenced":false,"fenced_at":null,"owner":{"host":null,"boot_id":null,"pidns":01,"pid":1,"start":0},"child":null,"claimed_at":null,"started_at":null,"finished_at":null,"exit_code":-1,"error":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := readCanonical(b)
		if !ok {
			return
		}
		var want form.Record
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&want); err != nil || dec.More() {
			t.Fatalf("readCanonical(%q) accepted what encoding/json refuses: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("readCanonical(%q) = %+v; encoding/json reads %+v", b, got, want)
		}
	})
}

// FuzzCanonicalEncode: whenever appendCanonical writes a record, it writes
// what json.Marshal writes, and readCanonical reads it back.
func FuzzCanonicalEncode(f *testing.F) {
	f.Add("0dn7yrqdrcn2j-shf3lc", "job", "cron", "", "h", "b", 42, uint64(7), 3, true, false)
	f.Add("", "", "", "x\"y", "", "", -1, uint64(0), -300, false, true)
	f.Fuzz(func(t *testing.T, id, job, source, errMsg, host, boot string, pid int, start uint64, code int, fenced, nulls bool) {
		pidns := start ^ uint64(pid)
		j := form.Record{V: recordFormat, ID: id, Job: job, Status: job, Fenced: fenced, Error: &errMsg,
			Owner: &form.Owner{Host: &host, BootID: &boot, PIDNS: &pidns, PID: pid, Start: &start},
			Child: &form.Child{PID: code, Start: &start}, ClaimedAt: &id, ExitCode: &code}
		if nulls {
			j.Error, j.Owner.Host, j.Owner.PIDNS, j.Owner.Start, j.Child, j.ExitCode, j.Source = nil, nil, nil, nil, nil, nil, &source
		}
		got, ok := form.AppendCanonical(nil, &j)
		if !ok {
			return
		}
		want, err := json.Marshal(j)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("form.AppendCanonical(%+v) =\n%s\nwant (json.Marshal, %v)\n%s", j, got, err, want)
		}
		back, ok := readCanonical(got)
		if !ok || !reflect.DeepEqual(back, j) {
			t.Fatalf("readCanonical(%s) = %+v, %v; want %+v", got, back, ok, j)
		}
	})
}
