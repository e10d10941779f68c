package campaigns

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/nyaruka/phonenumbers"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/store"
)

// Voice campaigns: a campaign whose deployment is on a telco_voice channel calls its
// contacts from that channel's number, with answering-machine detection (package voice
// answers the calls: the voicemail drop to a machine, the agent's call flow to a person).
// A contact is called only with consent_calls, and only inside the campaign's window in the
// contact's own time zone (DefaultCallWindow when the campaign has none); a contact outside
// it is deferred, not skipped, and called once it opens.

// Caller places a voice campaign's calls (package voice implements it).
type Caller interface {
	Configured() bool
	// PlaceCall calls to from the voice channel ch, for the campaign send sendID (the call's
	// flow finds the campaign, contact and conversation by it), and returns the CallSid.
	PlaceCall(ctx context.Context, ch store.Channel, to string, sendID uuid.UUID) (callSID string, err error)
}

// DefaultCallWindow is when a voice campaign without a window of its own calls, in the
// contact's time zone: 08:00 to 21:00, as telemarketing rules commonly allow.
var DefaultCallWindow = [2]string{"08:00", "21:00"}

// RecordingKindVoicemailDrop is the kind of recording a voice campaign leaves on machines.
const RecordingKindVoicemailDrop = "voicemail_drop"

// checkVoicemail checks a campaign's voicemail_recording_id against its channel: required on
// a voice campaign, and a workspace recording of kind voicemail_drop; refused on others.
func checkVoicemail(ctx context.Context, q interface {
	RecordingByID(context.Context, uuid.UUID, uuid.UUID) (store.Recording, error)
}, ws uuid.UUID, channelType string, id *uuid.UUID) error {
	const param = "voicemail_recording_id"
	if channelType != string(blueprint.ChannelTelcoVoice) {
		if id != nil {
			return apierr.Invalid(param, "invalid_value", "voicemail_recording_id is for voice campaigns (a telco_voice deployment) only; set it to null.")
		}
		return nil
	}
	if id == nil {
		return apierr.Invalid(param, "missing_parameter", "voicemail_recording_id is required on a voice campaign: the id of a recording of kind voicemail_drop (POST /api/recordings), played to answering machines.")
	}
	rec, err := q.RecordingByID(ctx, ws, *id)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.Invalid(param, "invalid_value", "voicemail_recording_id names no recording of this workspace.")
	}
	if err != nil {
		return err
	}
	if rec.Kind != RecordingKindVoicemailDrop {
		return apierr.Invalid(param, "wrong_recording_kind", "voicemail_recording_id must be a recording of kind voicemail_drop; %q is a %s recording.", rec.Name, rec.Kind)
	}
	return nil
}

// isVoice says whether the campaign's deployment is on telco_voice.
func (s *Service) isVoice(ctx context.Context, c store.Campaign) (bool, error) {
	if c.DeploymentID == nil {
		return false, nil
	}
	d, err := s.store.CampaignDeployment(ctx, c.WorkspaceID, *c.DeploymentID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil && d.ChannelType == string(blueprint.ChannelTelcoVoice), err
}

// ContactZone is the time zone a voice campaign calls a contact in: the contact's own
// timezone, else the zone of its phone number (libphonenumber's prefix map: the first zone
// of a prefix that spans several), else the campaign's timezone, else UTC.
func ContactZone(contactTZ, phone, campaignTZ *string) *time.Location {
	if contactTZ != nil {
		if l, err := time.LoadLocation(*contactTZ); err == nil {
			return l
		}
	}
	if phone != nil {
		if l := PhoneZone(*phone); l != nil {
			return l
		}
	}
	if campaignTZ != nil {
		if l, err := time.LoadLocation(*campaignTZ); err == nil {
			return l
		}
	}
	return time.UTC
}

// PhoneZone is the representative time zone of an E.164 number (nil: unknown).
func PhoneZone(e164 string) *time.Location {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return nil
	}
	zones, err := phonenumbers.GetTimezonesForNumber(n)
	if err != nil {
		return nil
	}
	for _, z := range zones {
		if z == phonenumbers.UNKNOWN_TIMEZONE {
			continue
		}
		if l, err := time.LoadLocation(z); err == nil {
			return l
		}
	}
	return nil
}

// untilCallWindow is how long until the contact's calling window opens (0: it is open).
func untilCallWindow(c store.Campaign, contact store.AudienceContact, now time.Time) time.Duration {
	start, end := DefaultCallWindow[0], DefaultCallWindow[1]
	if c.WindowStart != nil && c.WindowEnd != nil {
		start, end = *c.WindowStart, *c.WindowEnd
	}
	return untilOpen(start, end, ContactZone(contact.Timezone, contact.Phone, c.Timezone), now)
}
