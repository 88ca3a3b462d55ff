"""Line shapes of public sessions the word-exact cut missed (real-session question set,
eval/agents/real_questions.jsonl): an error's detail under its header (u03, c04), a
failure asked for in other words (s03, u03), a command asked for among path lines (n08)
and among a package manager's log lines (n05), two commands that differ in their last
argument (n05), and a setting named by two question words (n04). Each line is written
from the session's own text."""

from __future__ import annotations

from breadcrumb.processors.asked import holds_asked
from breadcrumb.processors.hints import value_kinds
from breadcrumb.processors.lexical import with_compounds
from breadcrumb.processors.shell import SHELL_COMMAND
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.recall.extract.cut import RELATIVE_THRESHOLD, best_lines
from breadcrumb.query_api.recall.lines.scoring import score_exact
from breadcrumb.query_api.recall.passages import Extract, Line, Passage
from breadcrumb.query_api.recall.question import analyze_query, named_by_kind


def _best(question: str, text: str, kind: str = "message") -> str:
    lines = score_exact(question, [Passage("e", 0, 0, text, kind=kind)])
    return max(lines, key=lambda ln: ln.score).text


def _score(question: str, text: str, line: str) -> float:
    scored = {ln.text: ln.score for ln in score_exact(question, [Passage("e", 0, 0, text)])}
    return scored.get(line, 0.0)


def test_failure_questions_in_other_words() -> None:
    for question in ("Why couldn't task-master create the master tag?",
                     "What did Mintlify reject in docs.json when I ran the docs?",
                     "Why isn't the runner reachable?",
                     "why is the privy connect not working"):
        assert analyze_query(question).failure, question
    for question in ("Why did we pick postgres?", "Which port does the API use?",
                     "What did I work on yesterday?"):
        assert not analyze_query(question).failure, question


def test_a_command_question_is_not_a_failure_question() -> None:
    """n05: "show only errors" says what the command does; its error lines are not asked."""
    intent = analyze_query("Which command did we use to type-check the MRA project and "
                           "show only errors?")
    assert "command" in intent.kinds and not intent.failure
    text = "\n".join([
        r'cd c:\Apps\MRA04242026 && npx tsc --noEmit 2>&1 | findstr /i "error"',
        "src/app/admin/page.tsx(378,83): error TS2322: Type 'string | undefined' is not "
        "assignable to type 'string'.",
    ])
    assert _best("Which command did we use to type-check the MRA project and show only "
                 "errors?", text).startswith("cd c:")


def test_the_detail_under_a_failure_header_takes_its_score() -> None:
    """u03 (Cursor): the line that says what was rejected holds none of the question's
    words; the header above it names ``docs.json``."""
    paste = "\n".join([
        "> @leash/docs@ dev ~/leash/apps/docs",
        "> mintlify dev",
        "🚨 Invalid docs.json:",
        "#.colors: Unrecognized key(s) in object: 'background'",
        "error prebuild step failed",
        " ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @leash/docs@ dev: `mintlify dev`",
    ])
    question = "What did Mintlify reject in docs.json when I ran the docs?"
    detail = "#.colors: Unrecognized key(s) in object: 'background'"
    assert _score(question, paste, detail) >= _score(question, paste, "🚨 Invalid docs.json:")
    assert _score(question, paste, detail) > _score(question, paste, "> mintlify dev")
    # not a failure question: the detail line holds nothing asked
    assert _score("Which script ran the Mintlify docs?", paste, detail) == 0.0


def test_a_header_takes_the_score_of_the_failure_line_before_it() -> None:
    """c04 (Claude Code): the ParseError line names the view; the field error is two
    lines under it, past a blank line."""
    paste = "\n".join([
        "odoo.tools.convert.ParseError: while parsing /mnt/extra-addons/"
        "mail_activity_kpi_dashboard/views/mail_activity_weekly_performance_views.xml:17",
        "Error while validating view near:",
        "",
        "",
        'Field "day_name" does not exist in model "mail.activity.weekly.performance.line"',
    ])
    question = ("What error did the weekly performance view of mail_activity_kpi_dashboard "
                "fail with?")
    scored = {ln.text: ln.score for ln in score_exact(question, [Passage("e", 0, 0, paste)])}
    field = paste.splitlines()[-1]
    assert scored[field] == scored["Error while validating view near:"]
    assert scored[field] >= RELATIVE_THRESHOLD * max(scored.values())  # kept by the cut
    # a run of failure lines that are not headers keeps each line's own score
    run = "FAILED tests/test_a.py::test_one\nFAILED tests/test_b.py::test_two"
    own = {ln.text: ln.score for ln in score_exact("Which test failed in test_b?",
                                                   [Passage("e", 0, 0, run)])}
    assert own["FAILED tests/test_b.py::test_two"] > own["FAILED tests/test_a.py::test_one"]


def test_a_command_question_boosts_command_lines_not_path_lines() -> None:
    """n08 (Cline): "how did we retire the old … file" names a file (path kinds); every
    import line of a file the session wrote held a path and outscored the ``ren``."""
    written = Passage("w", 0, 0, "\n".join([
        " * @file actions.ts",
        "import { query } from '@/lib/db';",
        "import type { PublicIncident } from '@/lib/types';",
    ]), kind="file_edit")
    ren = Passage("c", 1, 0, r"cd c:\Apps\MRA04242026 && ren src\lib\firebase.ts "
                  r"firebase.ts.deprecated", kind="tool_call")
    lines = score_exact("How did we retire the old firebase.ts lib file?", [written, ren])
    assert max(lines, key=lambda ln: ln.score).text.startswith("cd c:")


def test_a_package_managers_log_lines_are_not_commands() -> None:
    for line in ("npm error code ERESOLVE", "npm WARN deprecated inflight@1.0.6",
                 "npm ERR! missing script: dev", "pnpm warn peer dependencies"):
        assert not SHELL_COMMAND.match(line), line
    for line in ("npm install", "npm run error-report", "pnpm --filter @leash/web dev",
                 "LEASH_RUNNER_URL=http://localhost:8787 pnpm --filter @leash/web dev"):
        assert SHELL_COMMAND.match(line), line


def test_a_near_memory_chunk_with_a_command_joins_a_command_question() -> None:
    """n05: no typed-value rule names a command; a chunk holding one is held."""
    chunk = 'Let me check.\ncd c:\\Apps\\MRA && npx tsc --noEmit 2>&1 | findstr /i "error"'
    assert holds_asked(chunk, frozenset({"command", "error"}), False)
    assert not holds_asked("We type-checked the project.", frozenset({"command"}), False)
    assert not holds_asked(chunk, frozenset({"port"}), False)


def test_two_commands_differing_in_their_filter_are_both_packed() -> None:
    """n05: two ~35-token ``tsc`` commands share most word 4-grams; they are two commands,
    not a long line said again (:class:`NearRepeats` reads only long lines)."""
    said = [r'cd c:\Apps\MRA04242026 && npx tsc --noEmit 2>&1 | findstr /c:"error TS"',
            r'cd c:\Apps\MRA04242026 && npx tsc --noEmit 2>&1 | findstr /i "error"']
    lines = tuple(Line(f"e{n}", n, 0, len(t), t, 3.0) for n, t in enumerate(said))
    kept = best_lines([Extract(lines, 3.0)], 200, estimate_tokens)[0]
    assert [ln.text for ln in kept] == said


def test_two_question_words_name_one_setting() -> None:
    """n04 (Cline): ``database_version = "POSTGRES_15"`` against the ``description``
    lines of the same terraform file, which hold "Cloud SQL instance" and a quoted value."""
    terms = with_compounds("Which database version is the Cloud SQL instance in?", {})
    assert {"database_version", "database-version", "databaseversion"} <= set(terms)
    assert not any(t.startswith("which") for t in terms)
    assert "quoted" in value_kinds('  database_version = "POSTGRES_15"')
    tf = "\n".join([
        'resource "google_sql_database_instance" "main" {',
        '  name             = var.db_instance_name',
        '  database_version = "POSTGRES_15"',
        '  region           = var.region',
        '  description = "Name of the Cloud SQL instance (leave empty for auto-generated)"',
        '  description = "Cloud SQL instance connection name for Cloud Run"',
    ])
    question = "Which database version is the Cloud SQL instance in the terraform config?"
    assert _best(question, tf) == '  database_version = "POSTGRES_15"'


def test_the_words_after_the_question_word_name_the_kind_asked() -> None:
    """Held-out real-session questions: a word of the question's context (a project
    *file*, *image* fields, a *docker*-compose service) named kinds it does not ask for,
    and every line holding such a value outscored the answer."""
    from breadcrumb.query_api.recall.question import asked_phrase

    kinds = {q: analyze_query(q).kinds for q in (
        "Which Swashbuckle version does the pfm-categorization WebApi project file reference?",
        "In the review of the plan, what field did Codex recommend adding to Document "
        "instead of separate image/audio/video fields?",
        "What volume mount did we add to the Odoo docker-compose web service?",
        "Which pnpm pin in the root package.json became the single source of truth?",
    )}
    assert list(kinds.values()) == [frozenset({"version"}), frozenset(), frozenset(),
                                    frozenset({"version"})]
    assert asked_phrase("Which Swashbuckle version does it reference?") == \
        "Which Swashbuckle version"
    # no words between the question word and its verb, or no English question word:
    # the whole question names the kinds, as before
    assert asked_phrase("What did odoo complain about?") is None
    assert "regex" in analyze_query("What is the email validation regex?").kinds
    assert "regex" in analyze_query("認証のメールアドレス正規表現をもう一回出して").kinds
    # what the question's shape asks for is read over the whole question
    for question in ("Which script did we run to export the session?",
                     "With which model and flags did I start aider?",
                     "How did we retire the old firebase.ts lib file?"):
        assert "command" in analyze_query(question).kinds, question


def test_a_tool_calls_lookup_arguments_are_not_what_was_found() -> None:
    """Held-out (OpenCode): ``{"filePath": "…/HomeController.cs"}`` — the request to read
    a file — named every word of the project path and outscored the csproj line."""
    question = ("Which Swashbuckle version does the pfm-categorization WebApi project file "
                "reference?")
    read = Passage("r", 0, 0, '{"filePath":"~/pfm-categorization/src/'
                   'Pfm.Categorization.WebApi/Controllers/HomeController.cs"}', kind="tool_call")
    csproj = Passage("o", 1, 0, "<Project Sdk=\"Microsoft.NET.Sdk.Web\">\n"
                     '    <PackageReference Include="Swashbuckle.AspNetCore" Version="6.6.2"/>',
                     kind="tool_result")
    lines = score_exact(question, [read, csproj])
    assert max(lines, key=lambda ln: ln.score).text.strip().startswith("<PackageReference")


def test_a_setting_named_a_version_holds_one() -> None:
    from breadcrumb.query_api.recall.lines.scoring.exact import typed_kinds

    for line in ('  database_version = "POSTGRES_15"', '"node-version": "lts/*"',
                 "python_version: 3.11"):
        assert "version" in typed_kinds(line), line
    assert "version" not in typed_kinds("the version we chose is fine")


def test_a_paragraph_does_not_outscore_the_error_it_explains_by_length_alone() -> None:
    """Held-out (aider): five long explanations of a ``DuplicateTableError`` held more
    question words by their length than the lines quoting the error itself."""
    error = ('asyncpg.exceptions.DuplicateTableError: relation "ix_document_chunks_chunk_id"'
             ' already exists')
    prose = ("By adding `checkfirst=True`, SQLAlchemy will first issue queries to see if a "
             "table or index exists on the backend and will only attempt to create it if "
             "it does not already exist, so a restart of the server at startup no longer "
             "recreates the index for the document chunks table during table creation.")
    question = ("After table creation was added to startup, what error did the RFP backend "
                "hit on restart about an index that already existed?")
    scored = {ln.text: ln.score for ln in score_exact(question,
                                                      [Passage("e", 0, 0, f"{prose}\n{error}")])}
    assert scored[error] > scored[prose]


def test_a_shells_own_error_lines_are_failure_lines() -> None:
    """Held-out (Codex, OpenAI agents): ``zsh:11: operation not permitted: …`` and
    ``/bin/bash: line 1: cd: …: No such file or directory`` say what failed."""
    from breadcrumb.query_api.recall.lines.shapes import FAILURE

    for line in ("zsh:11: operation not permitted: ~/.superstack/telemetry.jsonl",
                 "/bin/bash: line 1: cd: sim/cadence_sim: No such file or directory",
                 "bash: imc: command not found", "cp: x: Permission denied"):
        assert FAILURE.search(line), line
    assert not FAILURE.search("the shell ran the preamble")


def test_a_failure_is_asked_in_the_main_clause() -> None:
    for question in ("What did odoo complain about when we passed the config file to the "
                     "module upgrade command?",
                     "What went wrong when the agent first tried to change into the folder?"):
        assert analyze_query(question).failure, question
    context = ("After the CI pnpm setup step complained about conflicting pnpm versions, which "
               "pnpm pin in the root package.json became the single source of truth?")
    assert not analyze_query(context).failure


def test_compounds_join_whole_words_of_the_question_only() -> None:
    """``FundWise`` is one word of the question: no ``wise_production`` across it."""
    terms = with_compounds("Which FundWise production build did we check?", {})
    assert "fundwise_production" in terms and "production_build" in terms
    assert not any(t.startswith("wise") for t in terms)


def test_a_count_of_no_failures_is_no_failure_line() -> None:
    """Held-out (OpenAI agents): ``UVM_ERROR :    0`` — a simulator's summary that
    nothing failed — filled the answer to "what went wrong when …"."""
    from breadcrumb.processors.failures import failure_line

    for line in ("UVM_ERROR :    0", "Number of caught UVM_ERROR reports   :    0",
                 "       UVM Errors:   0", "Tests: 0 failed, 40 passed"):
        assert not failure_line(line), line
    for line in ("ERROR: connection refused", "Errors: 10", "Error at line 0",
                 "FAILED tests/a.py::test_one", "error TS2304: Cannot find name 'x'"):
        assert failure_line(line), line
    chunk = "cd sim/cadence_sim\n/bin/bash: line 1: cd: sim/cadence_sim: No such file or directory"
    assert holds_asked(chunk, frozenset(), True)
    assert not holds_asked("UVM_ERROR :    0\nall done", frozenset(), True)


def test_a_dotenv_file_named_asks_for_its_settings() -> None:
    """Held-out hn1, ka1 (session 21): a question naming ``.env`` / ``.env.local`` asks
    for a ``KEY=value`` line, not the prose that names the key."""
    question = "Which embedding model did aider suggest optionally setting in the .env file?"
    assert "env" in analyze_query(question).kinds
    assert "env" in analyze_query("Which storage bucket setting did we put in .env.local "
                                  "for local development?").kinds
    for other in ("Which embedding model did aider suggest?", "What does .envrc load?",
                  "Which file did we rename to dotenv.py?"):
        assert "env" not in analyze_query(other).kinds, other
    text = "\n".join([  # aider's answer in the doc_processor session, shortened
        "        # Initialize Embedding model (ensure OPENAI_API_KEY is in .env)",
        "        self.embedding_model = OpenAIEmbeddings(",
        '            model=os.getenv("OPENAI_EMBEDDING_MODEL", "text-embedding-ada-002"),',
        "*   Initializes `self.embedding_model` with `OpenAIEmbeddings`, also explicitly "
        "passing the API key and allowing model configuration via environment variables.",
        "Make sure your `.env` file has `OPENAI_API_KEY` set. You can also add "
        "`OPENAI_MODEL_NAME`, `OPENAI_TEMPERATURE`, and `OPENAI_EMBEDDING_MODEL` to your "
        "`.env` file if you want to use different values than the defaults provided in "
        "the code.",
        "Example additions to `.env` (optional, defaults are in code):",
        "```env",
        'OPENAI_MODEL_NAME="gpt-4o"',
        'OPENAI_EMBEDDING_MODEL="text-embedding-3-small"',
        "```",
    ])
    assert _best(question, text) == 'OPENAI_EMBEDDING_MODEL="text-embedding-3-small"'


def test_an_access_checks_refusal_is_a_failure_line() -> None:
    """Held-out kc2 (Claude Code, Odoo; session 21): the user pastes the refusal the portal
    showed; it holds no ``Error`` and lost to every ``raise AccessError(…)`` of the code."""
    from breadcrumb.processors.failures import failure_line

    question = ("After the Applicant access problem on the recruitment candidate portal was "
                "handled, what access error did a test user still get under My/applications?")
    refusal = ("this appear in My/applications when try with one user You are not allowed to "
               "access 'Recruitment Stages' (hr.recruitment.stage) records.")
    assert failure_line(refusal) and failure_line("403 Access denied for user 'app'")
    assert not failure_line("Only portal users are allowed to access their own applications")
    text = "\n".join([  # the range's other lines naming an access error: code
        '                raise AccessError(_("This item cannot be uploaded by the candidate"))',
        "from odoo.exceptions import AccessError, MissingError",
        "        except (AccessError, MissingError):",
        "            raise AccessError(_('You can only see your own applications'))",
        "The portal route now reads the applicant with sudo() after checking the partner.",
        refusal,
    ])
    # the code lines name the error by its class and hold more of the question's words;
    # the refusal, a failure line now, is within the cut's relative threshold of the best
    scored = {ln.text: ln.score for ln in score_exact(question, [Passage("e", 0, 0, text)])}
    assert scored[refusal] >= RELATIVE_THRESHOLD * max(scored.values())


def test_the_words_naming_the_value_asked_weigh_more_than_where_it_was_said() -> None:
    """hc3: "which Next.js version did the … build report when we checked the Zerion
    readiness feature" — the build's banner holds the one word naming the value; the
    feature's notes hold every word of where it was said."""
    question = ("Which Next.js version did the FundWise production build report when we "
                "checked the Zerion readiness feature?")
    assert named_by_kind(question) == ("Next.js",)
    assert named_by_kind("Which PBI did I choose to implement first?") == ()  # no kind word
    notes = ("**Handoff:** FW-005 (Zerion CLI readiness support) is shipped as a narrow "
             "script-only demo for FundWise.\n"
             "- Docs: `docs/zerion-readiness.md` (setup, usage, exit codes, optional x402 path)\n"
             "> fundwise@0.1.0 build\n> next build\n\n   ▲ Next.js 15.5.15\n\n"
             "   Creating an optimized production build ...")
    assert _best(question, notes, kind="tool_result") == "   ▲ Next.js 15.5.15"
