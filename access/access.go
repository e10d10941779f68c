// Package access is the permission table: which role may do what. Every surface asks it —
// the /v1 and /api routes (through the `x-permission` of each operation in the OpenAPI
// documents), the MCP tools and the builder assistant's tool loop (through the permission of
// each management operation) — so a role means the same thing wherever a key is used.
//
// A role includes everything of the roles below it: viewer < member < admin < owner.
package access

import (
	"fmt"
	"slices"
	"strings"

	"switchboard/apierr"
)

// Role is what a key may do. The zero Role is no role at all: it may use nothing that
// needs a permission, so a caller that forgets to say who asks gets the least, not the most.
type Role int

// The roles, from the least to the most powerful.
const (
	None Role = iota
	Viewer
	Member
	Admin
	Owner
)

var roleNames = []string{None: "", Viewer: "viewer", Member: "member", Admin: "admin", Owner: "owner"}

// String is the role's name as keys carry it.
func (r Role) String() string {
	if r < None || r > Owner {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return roleNames[r]
}

// ParseRole returns the role of a name; an unknown name is None, false.
func ParseRole(name string) (Role, bool) {
	i := slices.Index(roleNames, name)
	if i <= 0 {
		return None, false
	}
	return Role(i), true
}

// Names lists the roles' names, from the most to the least powerful.
func Names() []string { return []string{"owner", "admin", "member", "viewer"} }

// Permission names one thing a role may be allowed to do. The empty Permission needs no role:
// a deployed agent's own tools, which any caller of its chat may use.
type Permission string

// The permissions. Each is granted to one role and every role above it (table).
const (
	Read           Permission = "read"            // everything of the workspace, webhook secrets excepted
	Turns          Permission = "turns"           // run turns (the assistant is offered what the role may use)
	AgentsWrite    Permission = "agents.write"    // create and update agents, upload knowledge
	Crawl          Permission = "crawl"           // crawl websites into a knowledge base
	TestLinks      Permission = "test_links"      // generate test links
	Contacts       Permission = "contacts"        // create and change contacts
	CampaignsDraft Permission = "campaigns.draft" // draft campaigns
	Inbox          Permission = "inbox"           // take over, reply to, note, release and close conversations
	Deploy         Permission = "deploy"          // deploy and undeploy agents
	AgentsDelete   Permission = "agents.delete"   // delete agents
	Channels       Permission = "channels"        // create, change and delete channels
	Webhooks       Permission = "webhooks"        // create, update, delete webhooks; redeliver events
	Bulk           Permission = "bulk"            // the bulk tools
	CampaignsStart Permission = "campaigns.start" // start campaigns
	Keys           Permission = "keys"            // list keys; create and revoke member and viewer keys
	PhoneNumbers   Permission = "phone_numbers"   // buy phone numbers
	Settings       Permission = "settings"        // workspace settings
	KeysPrivileged Permission = "keys.privileged" // create and revoke owner and admin keys
	Audit          Permission = "audit"           // read the audit log (issue 48)
	Erase          Permission = "erase"           // erase a contact's personal data (issue 48)
)

// table is the least role holding each permission.
var table = map[Permission]Role{
	Read:           Viewer,
	Turns:          Viewer,
	AgentsWrite:    Member,
	Crawl:          Member,
	TestLinks:      Member,
	Contacts:       Member,
	CampaignsDraft: Member,
	Inbox:          Member,
	Deploy:         Admin,
	AgentsDelete:   Admin,
	Channels:       Admin,
	Webhooks:       Admin,
	Bulk:           Admin,
	CampaignsStart: Admin,
	Keys:           Admin,
	PhoneNumbers:   Admin,
	Settings:       Admin,
	KeysPrivileged: Owner,
	Audit:          Admin,
	Erase:          Admin,
}

// Permissions lists every permission, for tests and documentation, in a stable order.
func Permissions() []Permission {
	out := make([]Permission, 0, len(table))
	for p := range table {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Permission) int {
		if d := int(table[a]) - int(table[b]); d != 0 {
			return d
		}
		return strings.Compare(string(a), string(b))
	})
	return out
}

// Known reports whether p is a permission of the table (or the empty one).
func Known(p Permission) bool {
	_, ok := table[p]
	return ok || p == ""
}

// Needs is the least role holding p; the empty permission needs None. An unknown
// permission needs more than any role has, so a typo refuses rather than allows.
func Needs(p Permission) Role {
	if p == "" {
		return None
	}
	r, ok := table[p]
	if !ok {
		return Owner + 1
	}
	return r
}

// Allows reports whether r holds p.
func (r Role) Allows(p Permission) bool { return r >= Needs(p) }

// Check is nil when r holds p, and otherwise the 403 every surface answers: type
// permission_error, code role_not_allowed, naming the role needed, with a hint.
func Check(r Role, p Permission, what string) error {
	if r.Allows(p) {
		return nil
	}
	return Refusal(r, Needs(p), what)
}

// Refusal is the error refusing what to role r, which needs role need.
func Refusal(r Role, need Role, what string) error {
	have := r.String()
	if have == "" {
		have = "no role"
	} else {
		have = "a " + have + " key"
	}
	needName := need.String()
	if need > Owner {
		needName = "a role no key has"
	}
	return &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed",
		Message: fmt.Sprintf("%s needs the %s role; this request was made with %s.", what, needName, have),
		Hint:    fmt.Sprintf("Use a key of role %s or above, or ask a workspace owner or admin for one.", needName)}
}
