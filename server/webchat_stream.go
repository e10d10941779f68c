package server

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/gen/embedapi"
	"switchboard/store"
)

// streamRecheck is how often a visitor's stream reads the conversation even without an
// announcement, in case one was lost.
const streamRecheck = 10 * time.Second

// webchatStream serves GET /embed/{deploymentId}/stream: the replies of the people who took
// the visitor's conversation over, and the lines about it, as they are written. It wakes on
// the conversation's announcement (store.Tx.AnnounceConversation, heard by the hub on every
// replica) and reads the messages after its cursor, so a lost announcement only delays a
// frame until the next recheck, and a reconnect (Last-Event-ID) misses nothing.
//
// It stays a hand-registered route (see routeWebchat); embedDeployment has found the
// deployment and answered CORS.
func (s *Server) webchatStream(c echo.Context) error {
	d := deploymentOf(c.Request().Context())
	convRef, ok := s.webchat.Visitor(d, c.QueryParam("visitor_token"))
	if !ok || convRef == "" {
		return apierr.Invalid("visitor_token", "visitor_token_invalid", "The visitor token is not one this chat issued; start a new conversation without it.")
	}
	res, err := s.spend(c.Request().Context(), []budget{{"wcv:" + d.ID.String() + ":conv:" + convRef, s.cfg.WebchatVisitorRPM}})
	if err != nil {
		return err
	}
	setRateHeaders(c, res)
	if !res.Allowed {
		return &apierr.Error{Kind: apierr.KindRateLimited, Code: "rate_limit_exceeded", Message: "Too many connections: please wait a moment."}
	}
	ctx := c.Request().Context()
	conv, err := s.store.ConversationByRef(ctx, d.WorkspaceID, convRef)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.Invalid("visitor_token", "visitor_token_invalid", "This conversation no longer exists; start a new one without the token.")
	}
	if err != nil {
		return err
	}
	cursor, err := streamCursor(c)
	if err != nil {
		return err
	}
	if cursor < 0 {
		if cursor, err = s.store.LastMessageSeq(ctx, d.WorkspaceID, conv.ID); err != nil {
			return err
		}
	}
	changed, stop := s.hub.WaitConversation(d.WorkspaceID, conv.ID)
	defer stop()
	out := &sseWriter{w: c.Response()}
	out.start()
	recheck := time.NewTicker(streamRecheck)
	defer recheck.Stop()
	ping := time.NewTicker(s.cfg.SSEPingInterval)
	defer ping.Stop()
	for {
		msgs, err := s.store.AuthoredMessagesAfter(ctx, d.WorkspaceID, conv.ID, cursor)
		if err != nil {
			return nil // the headers are out: the client reconnects with Last-Event-ID
		}
		for _, m := range msgs {
			if err := sendHumanMessage(out, m); err != nil {
				return nil
			}
			cursor = m.Seq
		}
		if len(msgs) == 100 {
			continue // a long backlog: read on before waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.hub.Closing():
			return nil
		case <-changed:
		case <-recheck.C:
		case <-ping.C:
			if err := out.comment("ping"); err != nil {
				return nil
			}
		}
	}
}

// streamCursor is where a stream starts: Last-Event-ID (a reconnect), else `after`, else -1
// (now).
func streamCursor(c echo.Context) (int, error) {
	raw, param := c.Request().Header.Get("Last-Event-ID"), "Last-Event-ID"
	if raw == "" {
		raw, param = c.QueryParam("after"), "after"
	}
	if raw == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, apierr.Invalid(param, "invalid_value", "%s must be the seq of a message (an integer from 0).", param)
	}
	return n, nil
}

func sendHumanMessage(out *sseWriter, m store.AuthoredMessage) error {
	kind := embedapi.HumanMessageKindReply
	if m.Notice {
		kind = embedapi.HumanMessageKindNotice
	}
	author := ""
	if m.AuthorName != nil {
		author = *m.AuthorName
	}
	body, err := json.Marshal(embedapi.HumanMessage{Seq: m.Seq, Kind: kind, Text: m.Content, Author: author, CreatedAt: m.CreatedAt})
	if err != nil {
		return err
	}
	return out.frame(strconv.Itoa(m.Seq), "message", body)
}
