package recordings

import (
	"bytes"
	"time"

	"github.com/go-audio/wav"
	"github.com/hajimehoshi/go-mp3"

	"switchboard/apierr"
)

// Audio formats a recording may have.
const (
	FormatWAV = "wav"
	FormatMP3 = "mp3"
)

// ContentType is what a recording of a format is served as.
func ContentType(format string) string {
	if format == FormatMP3 {
		return "audio/mpeg"
	}
	return "audio/wav"
}

// sniff tells the format from the file's first bytes ("" for neither): a RIFF WAVE header,
// or an MP3's ID3 tag or frame sync.
func sniff(data []byte) string {
	switch {
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return FormatWAV
	case len(data) >= 3 && string(data[:3]) == "ID3":
		return FormatMP3
	case len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return FormatMP3
	}
	return ""
}

// probe reads the format and duration of an audio file with a decoder: WAV (PCM) or MP3.
// Anything else is 415; a file that claims to be one of them but does not decode is 400.
func probe(data []byte) (string, time.Duration, error) {
	format := sniff(data)
	switch format {
	case FormatWAV:
		d, err := wavDuration(data)
		return format, d, err
	case FormatMP3:
		d, err := mp3Duration(data)
		return format, d, err
	}
	return "", 0, &apierr.Error{Kind: apierr.KindUnsupportedMediaType, Code: "unsupported_media_type", Param: "file",
		Message: "file must be a WAV (PCM) or MP3 audio file."}
}

func corrupt(format, why string) error {
	return apierr.Invalid("file", "corrupt_audio", "file is not a readable %s file: %s.", format, why)
}

// wavDuration is the length of a PCM WAV file's audio, from its format and data chunks.
func wavDuration(data []byte) (time.Duration, error) {
	d := wav.NewDecoder(bytes.NewReader(data))
	if !d.IsValidFile() {
		return 0, corrupt("WAV", "its header is damaged")
	}
	if d.WavAudioFormat != 1 {
		return 0, &apierr.Error{Kind: apierr.KindUnsupportedMediaType, Code: "unsupported_media_type", Param: "file",
			Message: "file is a compressed WAV: only PCM WAV (or MP3) can be played to callers."}
	}
	if err := d.FwdToPCM(); err != nil {
		return 0, corrupt("WAV", "it has no audio data")
	}
	if d.AvgBytesPerSec == 0 || d.PCMSize <= 0 {
		return 0, corrupt("WAV", "it has no audio")
	}
	if d.PCMSize > len(data) {
		return 0, corrupt("WAV", "it is cut short")
	}
	return time.Duration(int64(d.PCMSize) * int64(time.Second) / int64(d.AvgBytesPerSec)), nil
}

// mp3Duration is the length of an MP3 file, from its frames (decoded as 16-bit stereo).
func mp3Duration(data []byte) (time.Duration, error) {
	d, err := mp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		return 0, corrupt("MP3", "its frames cannot be read")
	}
	if d.SampleRate() <= 0 || d.Length() <= 0 {
		return 0, corrupt("MP3", "it has no audio")
	}
	const bytesPerSample = 4 // 16-bit, 2 channels
	samples := d.Length() / bytesPerSample
	return time.Duration(samples * int64(time.Second) / int64(d.SampleRate())), nil
}
