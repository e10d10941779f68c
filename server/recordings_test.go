package server_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/sms/smstest"
)

// recordingView is a recording as /api answers it.
type recordingView struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	DurationMS int    `json:"duration_ms"`
	Format     string `json:"format"`
	SizeBytes  int    `json:"size_bytes"`
	CreatedAt  string `json:"created_at"`
}

// audioTools skips (or fails under CI) without espeak-ng and sox.
func audioTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox", "soxi"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (make test installs it: scripts/ensure-audio.sh)", tool)
			}
			t.Skipf("%s is missing: scripts/ensure-audio.sh installs it", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// spokenAudio is text spoken by espeak-ng, as a file of the extension's format made by sox
// (wav, mp3, ogg...), with its duration as soxi reads it.
func spokenAudio(t *testing.T, text, ext string) ([]byte, float64) {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "spoken.wav")
	run(t, "espeak-ng", "-w", wav, text)
	out := wav
	if ext != "wav" {
		out = filepath.Join(dir, "spoken."+ext)
		run(t, "sox", wav, out)
	}
	return readAudio(t, out)
}

// toneAudio is a sine tone of seconds, in a WAV of the given rate and channels.
func toneAudio(t *testing.T, seconds, rate, channels int) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tone.wav")
	run(t, "sox", "-n", "-r", strconv.Itoa(rate), "-c", strconv.Itoa(channels), "-b", "16", out, "synth", strconv.Itoa(seconds), "sine", "440")
	data, _ := readAudio(t, out)
	return data
}

func readAudio(t *testing.T, path string) ([]byte, float64) {
	t.Helper()
	seconds, err := strconv.ParseFloat(strings.TrimSpace(run(t, "soxi", "-D", path)), 64)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data, seconds
}

// uploadRecording posts a recording as multipart/form-data with the bundle's key.
func (b *testBundle) uploadRecording(t *testing.T, key, kind, name, filename string, data []byte) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if kind != "" {
		require.NoError(t, w.WriteField("kind", kind))
	}
	if name != "" {
		require.NoError(t, w.WriteField("name", name))
	}
	part, err := w.CreateFormFile("file", filename)
	require.NoError(t, err)
	_, _ = part.Write(data)
	require.NoError(t, w.Close())
	return b.doRaw(t, http.MethodPost, "/api/recordings", key, w.FormDataContentType(), body.String())
}

func (b *testBundle) recordingCount(t *testing.T) int {
	return b.countWhere(t, `SELECT count(*) FROM recordings WHERE workspace_id = $1`, b.workspace.ID)
}

func TestRecordingUploadsReadFormatAndDurationAndKeepTheLimits(t *testing.T) {
	t.Parallel()
	audioTools(t)
	b := setup(t)
	wav, wavSeconds := spokenAudio(t, "You are speaking with an automated assistant.", "wav")
	mp3, mp3Seconds := spokenAudio(t, "Hello, please call us back about your order.", "mp3")

	resp, raw := b.uploadRecording(t, b.key, "disclosure", "AI notice", "notice.wav", wav)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	notice := decode[recordingView](t, raw)
	require.Equal(t, "recording", notice.Object)
	require.Equal(t, "disclosure", notice.Kind)
	require.Equal(t, "AI notice", notice.Name)
	require.Equal(t, "wav", notice.Format)
	require.Equal(t, len(wav), notice.SizeBytes)
	require.InDelta(t, wavSeconds*1000, float64(notice.DurationMS), 5, "the duration is read from the file")

	// The name says .wav but the file is MP3: the file decides.
	resp, raw = b.uploadRecording(t, b.key, "voicemail_drop", "Call us back", "drop.wav", mp3)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	drop := decode[recordingView](t, raw)
	require.Equal(t, "mp3", drop.Format)
	require.Equal(t, "voicemail_drop", drop.Kind)
	require.InDelta(t, mp3Seconds*1000, float64(drop.DurationMS), 60, "MP3 frames give the duration (soxi says %.3f s)", mp3Seconds)

	ogg, _ := spokenAudio(t, "Another format.", "ogg")
	wavBytes := append([]byte(nil), wav...)
	corruptWAV := append(wavBytes[:12:12], bytes.Repeat([]byte{0x7f}, 400)...)
	corruptMP3 := append([]byte("ID3\x03\x00\x00\x00\x00\x00\x00"), bytes.Repeat([]byte{0x00}, 400)...)
	for _, tc := range []struct {
		kind, name, filename string
		data                 []byte
		status               int
		param, code          string
	}{
		{"disclosure", "Ogg", "x.ogg", ogg, 415, "file", "unsupported_media_type"},
		{"disclosure", "Text", "x.wav", []byte("this is not audio at all"), 415, "file", "unsupported_media_type"},
		{"disclosure", "Broken WAV", "x.wav", corruptWAV, 400, "file", "corrupt_audio"},
		{"disclosure", "Broken MP3", "x.mp3", corruptMP3, 400, "file", "corrupt_audio"},
		{"disclosure", "Empty", "x.wav", nil, 400, "file", "empty_file"},
		{"disclosure", "Too long", "long.wav", toneAudio(t, 121, 8000, 1), 400, "file", "recording_too_long"},
		{"disclosure", "Too big", "big.wav", toneAudio(t, 31, 44100, 2), 413, "file", "recording_too_large"},
		{"ringtone", "Kind", "x.wav", wav, 400, "kind", "invalid_value"},
		{"disclosure", "", "x.wav", wav, 400, "name", "invalid_value"},
	} {
		resp, raw := b.uploadRecording(t, b.key, tc.kind, tc.name, tc.filename, tc.data)
		e := errorOf(t, resp, raw, tc.status)
		require.Equal(t, tc.code, e.codeOrEmpty(), "%s: %s", tc.name, e.Message)
		require.Equal(t, tc.param, *e.Param, tc.name)
	}
	require.Equal(t, 2, b.recordingCount(t), "nothing refused was stored")
	resp, raw = b.doRaw(t, http.MethodPost, "/api/recordings", b.key, "audio/wav", string(wav))
	require.Equal(t, "unsupported_media_type", errorOf(t, resp, raw, http.StatusUnsupportedMediaType).codeOrEmpty(), "a recording is sent as multipart")

	list := decode[struct {
		Object string          `json:"object"`
		Data   []recordingView `json:"data"`
	}](t, b.send(t, http.MethodGet, "/api/recordings", "", 200))
	require.Equal(t, "list", list.Object)
	require.Equal(t, []string{drop.ID, notice.ID}, []string{list.Data[0].ID, list.Data[1].ID}, "newest first")
	require.Equal(t, notice, decode[recordingView](t, b.send(t, http.MethodGet, "/api/recordings/"+notice.ID, "", 200)))

	// Another workspace sees none of it.
	other, err := b.store.CreateWorkspace(context.Background(), "other", 1_000_000_000)
	require.NoError(t, err)
	theirs := b.newKey(t, other, "admin")
	resp, raw = b.do(t, http.MethodGet, "/api/recordings/"+notice.ID, "Bearer "+theirs, "")
	errorOf(t, resp, raw, http.StatusNotFound)
	resp, raw = b.do(t, http.MethodDelete, "/api/recordings/"+notice.ID, "Bearer "+theirs, "")
	errorOf(t, resp, raw, http.StatusNotFound)

	// The carrier fetches the audio from its unlisted URL, with the right content type.
	for _, r := range []struct {
		id, ext, contentType string
		data                 []byte
	}{{notice.ID, "wav", "audio/wav", wav}, {drop.ID, "mp3", "audio/mpeg", mp3}} {
		rec, err := b.store.RecordingByID(context.Background(), b.workspace.ID, uuid.MustParse(r.id))
		require.NoError(t, err)
		got, contentType, status := fetchMedia(t, b, "/media/recordings/"+rec.MediaToken+"."+r.ext)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, r.contentType, contentType)
		require.Equal(t, r.data, got)
		_, _, status = fetchMedia(t, b, "/media/recordings/"+rec.MediaToken+".ogg")
		require.Equal(t, http.StatusNotFound, status, "the wrong extension names nothing")
	}
	_, _, status := fetchMedia(t, b, "/media/recordings/"+strings.Repeat("0", 64)+".wav")
	require.Equal(t, http.StatusNotFound, status)
}

func fetchMedia(t *testing.T, b *testBundle, path string) ([]byte, string, int) {
	t.Helper()
	resp, err := http.Get(b.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return data, resp.Header.Get("Content-Type"), resp.StatusCode
}

// TestRecordingKindsEndToEnd: a voicemail drop is refused as an agent's disclosure, a
// disclosure clip is accepted and played at the start of its calls, and it cannot be deleted
// while the agent uses it.
func TestRecordingKindsEndToEnd(t *testing.T) {
	t.Parallel()
	audioTools(t)
	w := newVoiceWorld(t, "")
	b := w.b
	mp3, _ := spokenAudio(t, "Sorry we missed you.", "mp3")
	wav, seconds := spokenAudio(t, "This call is answered by an AI assistant.", "wav")
	resp, raw := b.uploadRecording(t, b.key, "voicemail_drop", "Missed you", "drop.mp3", mp3)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	drop := decode[recordingView](t, raw)
	resp, raw = b.uploadRecording(t, b.key, "disclosure", "AI notice", "notice.wav", wav)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	notice := decode[recordingView](t, raw)
	require.InDelta(t, seconds*1000, float64(notice.DurationMS), 1, "to the millisecond for PCM")

	s := b.mcp(t, b.url, b.key)
	e := s.fails("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureRecordingId": drop.ID}}, "wrong_recording_kind")
	require.Contains(t, e["message"], "voicemail_drop")
	s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureRecordingId": notice.ID}})

	vs := w.post(t, "", smstest.CallForm("CA00000000000000000000000000000071", ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Play", "Gather"}, names(vs))
	played := strings.TrimSpace(vs[1].Text)
	require.True(t, strings.HasPrefix(played, "http://switchboard.test/media/recordings/") && strings.HasSuffix(played, ".wav"), played)
	got, contentType, status := fetchMedia(t, b, strings.TrimPrefix(played, "http://switchboard.test"))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "audio/wav", contentType)
	require.Equal(t, wav, got, "the carrier plays the uploaded file")

	ae := b.fail(t, http.MethodDelete, "/api/recordings/"+notice.ID, "", http.StatusConflict)
	require.Equal(t, "recording_in_use", ae.codeOrEmpty())
	require.Contains(t, ae.Message, `"Phone agent"`)
	s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureRecordingId": nil}})
	deleted := decode[struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}](t, b.send(t, http.MethodDelete, "/api/recordings/"+notice.ID, "", 200))
	require.Equal(t, "recording.deleted", deleted.Object)
	require.True(t, deleted.Deleted)
	b.fail(t, http.MethodGet, "/api/recordings/"+notice.ID, "", http.StatusNotFound)
	_, _, status = fetchMedia(t, b, strings.TrimPrefix(played, "http://switchboard.test"))
	require.Equal(t, http.StatusNotFound, status)
}

// recordingProbeBody is a valid upload: a disclosure clip of 0.1 s of 8 kHz 16-bit mono PCM
// silence (a WAV header written out here, so that probes need no audio tools).
var recordingProbeBody = func() string {
	const samples = 800
	var h bytes.Buffer
	le := func(v uint32, n int) {
		for i := range n {
			h.WriteByte(byte(v >> (8 * i)))
		}
	}
	h.WriteString("RIFF")
	le(36+samples*2, 4)
	h.WriteString("WAVEfmt ")
	le(16, 4)
	le(1, 2)     // PCM
	le(1, 2)     // mono
	le(8000, 4)  // sample rate
	le(16000, 4) // bytes per second
	le(2, 2)     // block align
	le(16, 2)    // bits per sample
	h.WriteString("data")
	le(samples*2, 4)
	h.Write(make([]byte, samples*2))
	return "--rb\r\nContent-Disposition: form-data; name=\"kind\"\r\n\r\ndisclosure\r\n" +
		"--rb\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nProbe\r\n" +
		"--rb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"probe.wav\"\r\nContent-Type: audio/wav\r\n\r\n" +
		h.String() + "\r\n--rb--\r\n"
}()
