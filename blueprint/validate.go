package blueprint

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones must not depend on the host's zoneinfo
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
	"golang.org/x/text/language"

	"switchboard/catalog"
)

// validate checks the `validate` struct tags. It holds only caches, filled as it goes, and is
// safe for concurrent use.
var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New()
	// Report fields by their YAML names, so that a namespace is a YAML path.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		return name
	})
	for tag, fn := range map[string]func(string) bool{
		"bcp47":    validLanguage,
		"iana_tz":  validTimeZone,
		"hhmm":     hhmmStart.MatchString,
		"hhmm_end": hhmmEnd.MatchString,
		"date":     validDate,
	} {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return fn(fl.Field().String()) }); err != nil {
			panic(err)
		}
	}
	// upload_id is a source's upload, as POST /api/uploads names it.
	if err := v.RegisterValidation("upload_id", func(fl validator.FieldLevel) bool { return uploadID.MatchString(fl.Field().String()) }); err != nil {
		panic(err)
	}
	// enum checks a field of an enumerated type against that type's list in Enums, so the
	// values are written once and not again in each struct tag.
	enums := map[reflect.Type][]string{}
	for _, e := range Enums() {
		enums[e.Type] = e.Values
	}
	if err := v.RegisterValidation("enum", func(fl validator.FieldLevel) bool {
		return slices.Contains(enums[fl.Field().Type()], fl.Field().String())
	}); err != nil {
		panic(err)
	}
	return v
}

// The syntactic part of these checks is also the pattern in schema.json, so that the JSON
// Schema never rejects what Parse accepts.
var (
	languageSyntax = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)
	timeZoneSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`)
	hhmmStart      = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	hhmmEnd        = regexp.MustCompile(`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`)
	dateSyntax     = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`)
	uploadID       = regexp.MustCompile(`^upl_[0-9A-Za-z]{22}$`)
)

const maxLanguageLen = 64

// validLanguage accepts a BCP 47 tag with a known 2- or 3-letter primary language.
func validLanguage(s string) bool {
	if len(s) > maxLanguageLen || !languageSyntax.MatchString(s) {
		return false
	}
	tag, err := language.Parse(s)
	if err != nil {
		return false
	}
	base, _ := tag.Base()
	return base.String() != "und"
}

// validDate accepts a calendar date written YYYY-MM-DD.
func validDate(s string) bool {
	if !dateSyntax.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// validTimeZone accepts an IANA time zone name.
func validTimeZone(s string) bool {
	if s == "Local" || len(s) > 64 || !timeZoneSyntax.MatchString(s) {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}

// validateBlueprint adds to d.errs what the struct tags and the cross-field rules find.
func validateBlueprint(bp *Blueprint, cat *catalog.Catalog, d *decoder) {
	var fieldErrs validator.ValidationErrors
	if err := validate.Struct(bp); errors.As(err, &fieldErrs) {
		for _, fe := range fieldErrs {
			_, path, _ := strings.Cut(fe.Namespace(), ".") // drop the root type name
			if fe.Tag() == "unique" && d.failedBelow(path) {
				continue // items that failed to decode are all "", not duplicates
			}
			d.add(path, errLine(d, path, fe.Tag()), message(fe))
		}
	} else if err != nil {
		panic(err) // only for a non-struct argument
	}

	a := &bp.Agent
	if a.LLM != nil {
		checkModel(a.LLM, cat, d)
	}
	if a.KnowledgeBase != nil {
		for i, s := range a.KnowledgeBase.Sources {
			checkSource(fmt.Sprintf("agent.knowledge_base.sources[%d]", i), s, d)
		}
	}
	if r := a.BusinessRules; r != nil {
		if h := r.BusinessHours; h != nil && h.Schedule != nil {
			for _, day := range days(h.Schedule) {
				path := "agent.business_rules.business_hours.schedule." + day.name
				if hrs := day.hours; hrs != nil && hhmmStart.MatchString(hrs.Start) && hhmmEnd.MatchString(hrs.End) && hrs.Start == hrs.End {
					d.add(path, d.lineOf(path), fmt.Sprintf("start and end are both %s: give different times (an end before the start is an overnight shift)", hrs.Start))
				}
			}
		}
		if e := r.Escalation; e != nil && e.Enabled != nil && *e.Enabled {
			if e.Trigger == "" {
				const path = "agent.business_rules.escalation.trigger"
				d.add(path, errLine(d, path, "required"), "is required when enabled is true")
			}
			if e.Action == "" {
				const path = "agent.business_rules.escalation.action"
				d.add(path, errLine(d, path, "required"), "is required when enabled is true")
			}
		}
	}
}

// checkSource applies the rules between a source's type and its other fields: each field
// is refused on a type that does not read it (rather than silently ignored), an api source
// needs its url, and a file_upload source names its upload by upload_id or by path, not
// both. A source without a valid type has that error only.
func checkSource(at string, s Source, d *decoder) {
	if !slices.Contains(SourceTypes(), s.Type) {
		return
	}
	only := func(field string, present bool, types ...SourceType) {
		if present && !slices.Contains(types, s.Type) {
			path := at + "." + field
			d.add(path, d.lineOf(path), "is only allowed when type is "+strings.Join(Strings(types), " or "))
		}
	}
	only("url", s.URL != "", SourceWebsiteCrawl, SourceAPI)
	only("depth", s.Depth != nil, SourceWebsiteCrawl)
	only("path", s.Path != "", SourceMarkdownFile, SourceFileUpload)
	only("upload_id", s.UploadID != "", SourceFileUpload)
	only("text", s.Text != "", SourceManualText)
	switch s.Type {
	case SourceAPI:
		if s.URL == "" {
			path := at + ".url"
			d.add(path, errLine(d, path, "required"), "is required when type is api")
		}
	case SourceFileUpload:
		switch {
		case s.UploadID == "" && s.Path == "":
			path := at + ".upload_id"
			d.add(path, errLine(d, path, "required"), "is required when type is file_upload (or give path, an uploaded file's name)")
		case s.UploadID != "" && s.Path != "":
			path := at + ".path"
			d.add(path, d.lineOf(path), "must not be given with upload_id: name the upload one way")
		}
	}
}

// checkModel refuses a model id the platform serves for another provider than llm.provider:
// llm.model is any string (the spec), but a served id under the wrong provider is a mistake
// that can be named. A name the platform does not serve at all is accepted, and
// ModelWarnings says what that means.
func checkModel(llm *LLM, cat *catalog.Catalog, d *decoder) {
	m, ok := cat.Lookup(llm.Model)
	if !ok || !validFamily(llm.Provider) || m.Family == llm.Provider {
		return
	}
	const path = "agent.llm.model"
	family := llm.Provider
	d.add(path, d.lineOf(path), fmt.Sprintf("%s is a %s model, not %s; %s models: %s", m.ID, m.Family, family, family, strings.Join(familyModels(cat, family), ", ")))
}

func validFamily(f catalog.Family) bool { return slices.Contains(Providers(), f) }

func familyModels(cat *catalog.Catalog, f catalog.Family) []string {
	var ids []string
	for _, m := range cat.All() {
		if m.Family == f {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

type day struct {
	name  string
	hours *Hours
}

func days(s *Schedule) []day {
	return []day{
		{"monday", s.Monday}, {"tuesday", s.Tuesday}, {"wednesday", s.Wednesday}, {"thursday", s.Thursday},
		{"friday", s.Friday}, {"saturday", s.Saturday}, {"sunday", s.Sunday},
	}
}

// errLine is the line to report for an error at path: a missing field has no line of its
// own, so it gets the line of the mapping that lacks it.
func errLine(d *decoder, path, tag string) int {
	if _, present := d.lines[path]; !present && strings.HasPrefix(tag, "required") {
		return d.lineOf(parent(path))
	}
	return d.lineOf(path)
}

// message words a failed struct tag.
func message(fe validator.FieldError) string {
	p := fe.Param()
	switch fe.Tag() {
	case "required":
		return "is required"
	case "required_if":
		_, value, _ := strings.Cut(p, " ")
		return "is required when type is " + value
	case "enum":
		return "must be one of " + strings.Join(EnumValues(reflect.TypeOf(fe.Value())), ", ")
	case "min", "max":
		bound := "at least"
		if fe.Tag() == "max" {
			bound = "at most"
		}
		v := reflect.ValueOf(fe.Value())
		switch fe.Kind() {
		case reflect.String:
			return fmt.Sprintf("must be %s %s characters long (got %d)", bound, p, utf8.RuneCountInString(v.String()))
		case reflect.Slice:
			return fmt.Sprintf("must have %s %s items (got %d)", bound, p, v.Len())
		}
		return fmt.Sprintf("must be %s %s (got %v)", bound, p, fe.Value())
	case "unique":
		return "must not contain duplicates"
	case "email":
		return "must be an email address"
	case "http_url":
		return "must be an http:// or https:// URL"
	case "bcp47":
		return "must be a known BCP 47 language tag, such as en, en-US or pt-BR"
	case "iana_tz":
		return "must be an IANA time zone such as Europe/Berlin or America/New_York"
	case "hhmm":
		return "must be a time as HH:MM, 00:00 to 23:59"
	case "hhmm_end":
		return "must be a time as HH:MM, 00:00 to 24:00"
	case "date":
		return "must be a date as YYYY-MM-DD"
	case "e164":
		return "must be a phone number in E.164, such as +14155550100"
	case "upload_id":
		return "must be an upload id: upl_ and 22 letters or digits, as POST /api/uploads returns"
	}
	return "fails the " + fe.Tag() + " check"
}
