package dashboard

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/google/uuid"

	"switchboard/manage"
	"switchboard/store"
)

// analyticsDays is how many days the analytics look back.
const analyticsDays = 30

// analyticsConversations bounds the conversations the page reads for its counts per day.
const analyticsConversations = 500

// agentAnalytics are the agent's numbers. Total and Labels are get_analytics' (the MCP tool
// and the builder's tool, one implementation); Escalated counts the conversations waiting
// for or held by a person (the team inbox's `status=escalated` for the agent); Spend and
// Turns are the ledger's charged turns of the last 30 days, as the overview ranks agents.
type agentAnalytics struct {
	Total     int
	Labels    []labelCount
	PerDay    chart
	Escalated int
	// AfterHours counts the turns of the last 30 days that the business-hours rule answered
	// (turn.completed events with handled_by "after_hours", as the event feed reports them).
	AfterHours int
	// AverageTurns is the mean of the listed conversations' exchanges: their messages
	// (visitor, agent, people, tool results) halved, to one decimal.
	AverageTurns string
	Spend        int64
	Turns        int64
}

type labelCount struct {
	Label string
	Count int
}

func (h *dash) analyticsOf(r *http.Request, p store.Principal, a *manage.AgentView) (agentAnalytics, []store.ConversationRow, error) {
	ctx := r.Context()
	res, err := h.Ops.GetAnalytics(ctx, p.WorkspaceID, manage.AnalyticsInput{AgentID: a.ID})
	if err != nil {
		return agentAnalytics{}, nil, err
	}
	id := uuid.MustParse(a.ID)
	rows, err := h.Store.ListConversations(ctx, p.WorkspaceID, store.ConversationFilter{AgentID: &id, Limit: analyticsConversations})
	if err != nil {
		return agentAnalytics{}, nil, err
	}
	since := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-analyticsDays)
	top, err := h.Store.TopAgents(ctx, p.WorkspaceID, since, 1000)
	if err != nil {
		return agentAnalytics{}, nil, err
	}
	out := agentAnalytics{Total: res.TotalConversations, AverageTurns: "0"}
	for l, n := range res.LabelCounts {
		out.Labels = append(out.Labels, labelCount{Label: l, Count: n})
	}
	sort.Slice(out.Labels, func(i, j int) bool {
		return out.Labels[i].Count > out.Labels[j].Count || out.Labels[i].Count == out.Labels[j].Count && out.Labels[i].Label < out.Labels[j].Label
	})
	for _, u := range top {
		if u.ID == id {
			out.Spend, out.Turns = u.SpendNanoUSD, u.Turns
		}
	}
	if out.AfterHours, err = h.Store.AgentRuleAnswers(ctx, p.WorkspaceID, id, "after_hours", since); err != nil {
		return agentAnalytics{}, nil, err
	}
	out.PerDay = conversationsPerDay(rows, since)
	messages := 0
	for _, c := range rows {
		messages += c.MessageSeq
		if c.Status == "escalated" {
			out.Escalated++
		}
	}
	if len(rows) > 0 {
		out.AverageTurns = fmt.Sprintf("%.1f", float64(messages)/2/float64(len(rows)))
	}
	shown := rows[:min(len(rows), agentConversations)]
	return out, shown, nil
}

// conversationsPerDay charts the conversations started on each day since since.
func conversationsPerDay(rows []store.ConversationRow, since time.Time) chart {
	counts := make([]int, analyticsDays)
	for _, c := range rows {
		if i := int(c.CreatedAt.UTC().Sub(since).Hours() / 24); i >= 0 && i < analyticsDays {
			counts[i]++
		}
	}
	pts := make([]point, analyticsDays)
	for i, n := range counts {
		pts[i] = point{Label: since.AddDate(0, 0, i).Format("Jan 2"), Value: float64(n), Text: fmt.Sprintf("%d conversations", n)}
	}
	return barChart("Conversations started per day, last 30 days", pts, "", "No conversation in the last 30 days.")
}
