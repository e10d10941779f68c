package inbox

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/store"
)

// MaxTextChars bounds a person's reply and a note, in characters (a visitor's message has
// the same bound).
const MaxTextChars = 4000

// Assign hands a conversation to a person: userID is "me" (the acting person), a user id of
// the workspace (a member, admin or owner), or nil to put it back in the queue. Taking over
// an open conversation escalates it; the visitor sees "<name> joined the conversation".
func (s *Service) Assign(ctx context.Context, workspaceID uuid.UUID, ref string, actor Actor, userID *string) (Detail, error) {
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Detail{}, err
	}
	target, err := s.assignee(ctx, workspaceID, actor, userID)
	if err != nil {
		return Detail{}, err
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		hold, err := s.lockOpen(ctx, tx, workspaceID, conv.ID)
		if err != nil {
			return err
		}
		if sameHolder(hold.AssigneeUserID, target.ref()) {
			return nil // already so: nothing to announce
		}
		if hold.AssigneeUserID != nil {
			if err := s.notice(ctx, tx, workspaceID, conv.ID, *hold.AssigneeUserID, "left the conversation"); err != nil {
				return err
			}
		}
		if err := tx.AssignConversation(ctx, workspaceID, conv.ID, target.ref()); err != nil {
			return err
		}
		if target.Person() {
			return s.noticeAs(ctx, tx, workspaceID, conv.ID, target, "joined the conversation")
		}
		return nil
	})
	if err != nil {
		return Detail{}, err
	}
	return s.detail(ctx, workspaceID, conv.ID)
}

// assignee resolves the person a conversation is assigned to (a zero Actor: nobody).
func (s *Service) assignee(ctx context.Context, workspaceID uuid.UUID, actor Actor, userID *string) (Actor, error) {
	if userID == nil {
		return Actor{}, nil
	}
	if *userID == "me" {
		if !actor.Person() {
			return Actor{}, apierr.Invalid("user_id", "session_required", "user_id \"me\" needs a signed-in person; a key acts as the workspace. Pass the user id of the person instead.")
		}
		return actor, nil
	}
	id, err := uuid.Parse(*userID)
	if err != nil {
		return Actor{}, apierr.Invalid("user_id", "invalid_value", "user_id must be a user id of the workspace, \"me\" or null.")
	}
	u, err := s.store.InboxUser(ctx, workspaceID, id)
	if err != nil {
		return Actor{}, apierr.NotFound("user_id", "user_not_found", "The workspace has no user %s.", id)
	}
	if role, _ := access.ParseRole(u.Role); !role.Allows(access.Inbox) {
		return Actor{}, apierr.Invalid("user_id", "assignee_not_allowed", "%s is a %s: only members, admins and owners can hold a conversation.", u.Email, u.Role)
	}
	return Actor{UserID: u.ID, Name: DisplayName(u.DisplayName, u.Email)}, nil
}

func (a Actor) ref() *uuid.UUID { return a.userRef() }

func sameHolder(a, b *uuid.UUID) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// lockOpen locks a conversation of the inbox that is not closed.
func (s *Service) lockOpen(ctx context.Context, tx *store.Tx, workspaceID, id uuid.UUID) (store.ConversationHold, error) {
	hold, err := tx.LockConversationHold(ctx, workspaceID, id)
	if err != nil {
		return hold, apierr.WithParam(err, "id")
	}
	if hold.Status == "closed" {
		return hold, apierr.Conflict("conversation_closed", "The conversation %s is closed.", hold.ShortID)
	}
	return hold, nil
}

// notice writes "<name of userID> <what>" into the conversation for the visitor.
func (s *Service) notice(ctx context.Context, tx *store.Tx, workspaceID, convID, userID uuid.UUID, what string) error {
	u, err := tx.InboxUser(ctx, workspaceID, userID)
	if err != nil {
		return err
	}
	return s.noticeAs(ctx, tx, workspaceID, convID, Actor{UserID: userID, Name: DisplayName(u.DisplayName, u.Email)}, what)
}

func (s *Service) noticeAs(ctx context.Context, tx *store.Tx, workspaceID, convID uuid.UUID, who Actor, what string) error {
	_, _, err := tx.AppendAuthored(ctx, workspaceID, convID, store.NewAuthoredMessage{Content: who.Name + " " + what,
		AuthorID: who.userRef(), AuthorName: who.Name, Notice: true})
	tx.AnnounceConversation(workspaceID, convID)
	return err
}

// Reply is a person's reply: stored in the conversation, delivered on its channel, and
// announced as turn.completed {surface: "human", user_id}. A person replying to a
// conversation nobody holds takes it over; a key must assign someone first.
func (s *Service) Reply(ctx context.Context, workspaceID uuid.UUID, ref string, actor Actor, text string) (Message, error) {
	text, err := checkText(text)
	if err != nil {
		return Message{}, err
	}
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Message{}, err
	}
	var out Message
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		hold, err := s.lockOpen(ctx, tx, workspaceID, conv.ID)
		if err != nil {
			return err
		}
		deliver, err := s.deliverer(hold.Channel)
		if err != nil {
			return err
		}
		if hold.AssigneeUserID == nil {
			if !actor.Person() {
				return apierr.Conflict("conversation_not_assigned", "Nobody holds the conversation %s, so the agent may answer in it at any time. Assign it to a person first (POST /api/conversations/%s/assign).", hold.ShortID, hold.ShortID)
			}
			if err := tx.AssignConversation(ctx, workspaceID, conv.ID, actor.userRef()); err != nil {
				return err
			}
			if err := s.noticeAs(ctx, tx, workspaceID, conv.ID, actor, "joined the conversation"); err != nil {
				return err
			}
		}
		seq, at, err := tx.AppendAuthored(ctx, workspaceID, conv.ID, store.NewAuthoredMessage{Content: text,
			AuthorID: actor.userRef(), AuthorName: actor.Name})
		if err != nil {
			return err
		}
		tx.AnnounceConversation(workspaceID, conv.ID)
		out = Message{Seq: seq, Role: RoleHuman, Text: text, Author: &Person{ID: actor.userRef(), Name: actor.Name}, CreatedAt: at}
		if err := deliver.Deliver(ctx, tx, Delivery{WorkspaceID: workspaceID, ConversationID: conv.ID, ShortID: conv.ShortID,
			Channel: hold.Channel, Text: text, AuthorName: actor.Name}); err != nil {
			return err
		}
		return s.announce(ctx, tx, workspaceID, hold, actor, text, "escalated")
	})
	return out, err
}

// announce appends the turn.completed of a person's line in the conversation: surface
// "human", the person's id (null for a key), and the conversation's status after it
// (escalated: a person holds it; closed: the person closed it).
func (s *Service) announce(ctx context.Context, tx *store.Tx, workspaceID uuid.UUID, hold store.ConversationHold, actor Actor, text, status string) error {
	var userID any
	if actor.Person() {
		userID = actor.UserID.String()
	}
	data := map[string]any{"conversation_id": hold.ShortID, "surface": "human", "user_id": userID, "author_name": actor.Name,
		"reply_preview": preview(text), "finish_reason": "stop", "model": "human", "status": status, "channel": hold.Channel}
	if hold.AgentID != nil {
		data["agent_id"] = hold.AgentID.String()
	}
	_, _, err := tx.Settle(ctx, workspaceID, nil, func(int64) []store.NewEvent {
		return []store.NewEvent{{Type: "turn.completed", Data: data}}
	})
	return err
}

// AddNote stores an internal note: never delivered to the visitor, never shown to the agent.
func (s *Service) AddNote(ctx context.Context, workspaceID uuid.UUID, ref string, actor Actor, text string) (Note, error) {
	text, err := checkText(text)
	if err != nil {
		return Note{}, err
	}
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Note{}, err
	}
	var out Note
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.LockConversationHold(ctx, workspaceID, conv.ID); err != nil {
			return apierr.WithParam(err, "id")
		}
		n, err := tx.AddNote(ctx, workspaceID, conv.ID, actor.userRef(), actor.Name, text)
		out = noteOf(n)
		return err
	})
	return out, err
}

// Release hands a conversation back to its agent: it answers the visitor's next message,
// with the whole transcript (the person's replies included) in its history.
func (s *Service) Release(ctx context.Context, workspaceID uuid.UUID, ref string, actor Actor) (Detail, error) {
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Detail{}, err
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		hold, err := s.lockOpen(ctx, tx, workspaceID, conv.ID)
		if err != nil {
			return err
		}
		if !handedOver(hold.Status, hold.AssigneeUserID != nil) {
			return apierr.Conflict("conversation_not_escalated", "The conversation %s is with its agent already.", hold.ShortID)
		}
		if hold.AgentID == nil {
			return apierr.Conflict("conversation_has_no_agent", "The conversation %s has no agent to hand it back to (no agent answers its channel); close it instead.", hold.ShortID)
		}
		if hold.AssigneeUserID != nil {
			if err := s.notice(ctx, tx, workspaceID, conv.ID, *hold.AssigneeUserID, "left the conversation"); err != nil {
				return err
			}
		}
		return tx.ReleaseConversation(ctx, workspaceID, conv.ID)
	})
	if err != nil {
		return Detail{}, err
	}
	return s.detail(ctx, workspaceID, conv.ID)
}

// Close closes a conversation: the visitor's next message starts a new one. Closing a closed
// conversation changes nothing. The close is announced like a person's reply (turn.completed,
// surface "human", status "closed", the notice as its preview): the contract's closed list of
// event types has no conversation.closed, and webhooks and workflows ("summarize a
// conversation when it closes") need to hear of it.
func (s *Service) Close(ctx context.Context, workspaceID uuid.UUID, ref string, actor Actor) (Detail, error) {
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Detail{}, err
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		hold, err := tx.LockConversationHold(ctx, workspaceID, conv.ID)
		if err != nil {
			return apierr.WithParam(err, "id")
		}
		if hold.Status == "closed" {
			return nil
		}
		const closed = "closed the conversation"
		if err := s.noticeAs(ctx, tx, workspaceID, conv.ID, actor, closed); err != nil {
			return err
		}
		if err := tx.CloseConversation(ctx, workspaceID, conv.ID); err != nil {
			return err
		}
		return s.announce(ctx, tx, workspaceID, hold, actor, actor.Name+" "+closed, "closed")
	})
	if err != nil {
		return Detail{}, err
	}
	return s.detail(ctx, workspaceID, conv.ID)
}

// handedOver reports whether a conversation is with people rather than its agent: escalated,
// or held by someone.
func handedOver(status string, held bool) bool { return status == "escalated" || held }

// CanRelease reports whether Release would hand the conversation back to its agent: it is
// with people, not closed, and has an agent.
func (d Detail) CanRelease() bool {
	return d.Status != "closed" && d.Agent != nil && handedOver(d.Status, d.Assignee != nil)
}

func checkText(text string) (string, error) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" || utf8.RuneCountInString(trimmed) > MaxTextChars {
		return "", apierr.Invalid("text", "invalid_value", "text must be 1 to %d characters, and not only spaces.", MaxTextChars)
	}
	return trimmed, nil
}
