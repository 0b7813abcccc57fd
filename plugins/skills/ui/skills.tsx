/**
 * The Skills page (admin, like every skills route): one element whose sub-views have their own URLs under
 * /skills, so reload and back work:
 *
 *   /skills                          the list (?q=&category=&tag=&source=), your drafts, the sync folder
 *   /skills/new                      create a local skill
 *   /skills/<id>                     one skill (?tab=files|revisions)
 *   /skills/<id>/revisions/<n>       one old revision
 *   /skills/drafts/<draftId>         a draft being edited
 */
import { adoptStyles, Button, defineElement, Empty, PageHeader, type PageContext } from '@hostd/ui'
import { CreateSkill } from './parts/create.tsx'
import { DraftPage } from './parts/draft.tsx'
import { SkillList } from './parts/list.tsx'
import { RevisionPage, SkillPage } from './parts/skill.tsx'
import css from './skills.css' with { type: 'text' }

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const SKILL = new RegExp(`^/(${UUID})$`)
const REVISION = new RegExp(`^/(${UUID})/revisions/([1-9][0-9]{0,15})$`)
const DRAFT = new RegExp(`^/drafts/(${UUID})$`)

function View({ ctx }: { ctx: PageContext }) {
  const rest = ctx.location.value.path.slice(ctx.base.length).replace(/\/+$/, '')
  let match: RegExpExecArray | null
  if (rest === '') return <SkillList ctx={ctx} />
  if (rest === '/new') return <CreateSkill ctx={ctx} />
  if ((match = DRAFT.exec(rest))) return <DraftPage key={match[1]} ctx={ctx} draftId={match[1]!} />
  if ((match = SKILL.exec(rest))) return <SkillPage key={match[1]} ctx={ctx} id={match[1]!} />
  if ((match = REVISION.exec(rest)))
    return <RevisionPage key={`${match[1]}/${match[2]}`} ctx={ctx} id={match[1]!} revision={Number(match[2])} />
  return (
    <>
      <PageHeader title="Not found" />
      <Empty
        icon="search"
        title="There is no skills page at this address"
        action={<Button onClick={() => ctx.navigate(ctx.base)}>All skills</Button>}
      />
    </>
  )
}

adoptStyles('skills', css)
defineElement('skills-page', ({ ctx }) => <View ctx={ctx} />)
